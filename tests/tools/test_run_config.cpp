// tests/tools/test_run_config.cpp — training configs: defaults, strict
// validation with the key named, --set overrides, data sections, and the
// model sizes taken from the data.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <map>

#include "datasets/data_testing.h"
#include "tools/train/data_setup.h"
#include "tools/train/progress.h"
#include "tools/train/run_config.h"

using namespace ks;
using namespace ks::tools;
using ks::testing::error_of;
using json = nlohmann::json;

namespace {
json minimal() { return {{"data", {{"dataset", "seq2seq"}}}}; }
std::string config_error(json j) {
  return error_of([&] { parse_train_config(j); });
}
}  // namespace

TEST_CASE("run config: defaults are filled in and printed back") {
  TrainConfig c = parse_train_config(minimal());
  CHECK(c.optimizer.type == "adamw");
  CHECK(c.train.steps == 1000);
  CHECK(c.schedule.total_steps == 1000);
  json back = c.to_json();
  CHECK(back["train"]["batch_size"] == 32);
  CHECK(back["schedule"]["type"] == "cosine");
  CHECK(parse_train_config(back).to_json() == back);  // the resolved form parses to itself
}

TEST_CASE("run config: every wrong key or value is named") {
  json j = minimal();
  j["trian"] = json::object();
  CHECK(config_error(j) == "config: trian: unknown key (did you mean train?)");
  j = minimal();
  j["train"] = {{"stepz", 3}};
  CHECK(config_error(j) == "config: train.stepz: unknown key (did you mean train.steps?)");
  j = minimal();
  j["train"] = {{"steps", "ten"}};
  CHECK(config_error(j) == "config: train.steps: expected an integer, got \"ten\"");
  j["train"] = {{"steps", 0}};
  CHECK(config_error(j) == "config: train.steps: must be in [1, 1099511627776], got 0");
  j["train"] = {{"steps", 2.5}};
  CHECK(config_error(j) == "config: train.steps: expected an integer, got 2.5");
  j = minimal();
  j["optimizer"] = {{"type", "lion"}};
  CHECK(config_error(j).find("config: optimizer.type: expected adamw, adam or sgd, got 'lion'") == 0);
  j["optimizer"] = {{"type", "sgd"}, {"beta1", 0.9}};
  CHECK(config_error(j) == "config: optimizer.beta1: unknown key for optimizer 'sgd'");
  j = minimal();
  j["schedule"] = {{"type", "noam"}, {"warmup_steps", 0}};
  CHECK(config_error(j) == "config: schedule: lr schedule: noam needs warmup_steps > 0");
  j = minimal();
  j["data"] = json::object();
  CHECK(config_error(j) == "config: data.dataset: missing (which data set to train on)");
  j = minimal();
  j["train"] = {{"device", "tpu"}};
  CHECK(config_error(j) == "config: train.device: expected cpu or cuda, got 'tpu'");
  j = minimal();
  j["train"] = {{"device", "cuda"}, {"precision", "fp8"}};
  CHECK(config_error(j) == "config: train.precision: expected float32, tf32, bf16, fp16 or auto, got 'fp8'");
  j["train"] = {{"precision", "tf32"}};
  CHECK(config_error(j) ==
        "config: train.precision: tf32 needs train.device cuda (the CPU has no TF32 unit; bf16 runs on both)");
  j["train"] = {{"precision", "bf16"}};
  CHECK(parse_train_config(j).train.precision == "bf16");
  j["train"] = {{"precision", "auto"}};  // kept as written: each machine resolves it (core/matmul_precision.h)
  CHECK(parse_train_config(j).train.precision == "auto");
  j["train"] = {{"device", "cuda"}, {"precision", "tf32"}};
  CHECK(parse_train_config(j).train.precision == "tf32");
  j = minimal();
  j["name"] = "a/b";
  CHECK(config_error(j).find("config: name: must be a non-empty file name") == 0);
}

TEST_CASE("run config: sizes and counts that allocate or loop are bounded, and nothing may be negative") {
  auto with = [](const char* section, const char* key, json value) {
    json j = minimal();
    j[section] = {{key, value}};
    return config_error(j);
  };
  CHECK(with("train", "threads", 1LL << 32) == "config: train.threads: must be in [0, 1024], got 4294967296");
  CHECK(with("train", "prefetch", 100000) == "config: train.prefetch: must be in [0, 1024], got 100000");
  CHECK(with("train", "batch_size", 1LL << 40).find("config: train.batch_size: must be in [1, 1048576]") == 0);
  CHECK(with("train", "bucket_batches", 1LL << 40).find("config: train.bucket_batches: must be in [0, 1048576]") == 0);
  CHECK(with("train", "accumulate_steps", 0).find("config: train.accumulate_steps: must be in [1, 65536]") == 0);
  CHECK(with("train", "patience", -1) == "config: train.patience: must be at least 0, got -1");
  CHECK(with("train", "max_time", -5).find("config: train.max_time: must be in [0, ") == 0);
  // The data-parallel keys (ignored by one process, still checked).
  CHECK(with("train", "bucket_mb", 0).find("config: train.bucket_mb: must be in [0.001, ") == 0);
  CHECK(with("train", "collective_timeout", 0).find("config: train.collective_timeout: must be in [0.1, ") == 0);
  CHECK(config_error([] {
          json j = minimal();
          j["train"] = {{"zero", "yes"}};
          return j;
        }())
            .find("config: train.zero") == 0);
  {
    json j = minimal();
    j["train"] = {{"zero", true}, {"bucket_mb", 4}, {"collective_timeout", 30}};
    const TrainConfig c = parse_train_config(j);
    CHECK(c.train.zero);
    CHECK(c.train.bucket_mb == 4);
    CHECK(c.train.collective_timeout == 30);
    CHECK(parse_train_config(c.to_json()).to_json() == c.to_json());
  }
  CHECK(with("schedule", "noam_scale", -1) == "config: schedule.noam_scale: must be positive, got -1");
  CHECK(with("schedule", "noam_scale", 0) == "config: schedule.noam_scale: must be positive, got 0");
  // A uint64 seed of 2^63 or more is a valid seed, not "negative".
  json j = minimal();
  j["seed"] = 18446744073709551615ull;
  CHECK(parse_train_config(j).seed == 18446744073709551615ull);
  j["seed"] = -1;
  CHECK(config_error(j) == "config: seed: must not be negative, got -1");
  // ... and a signed key is never handed a wrapped 2^63.
  CHECK(with("train", "steps", 9223372036854775808ull) == "config: train.steps: too large, got 9223372036854775808");
}

TEST_CASE("run config: a tokenizer's vocabulary is bounded by what load_tokenizer accepts") {
  // A bigger one would train and save, then fail to load in eval and resume.
  json d = {
      {"dataset", "text"}, {"train", "/nonexistent.txt"}, {"tokenizer", {{"type", "bpe"}, {"vocab_size", 1 << 21}}}};
  CHECK(error_of([&] { build_data(d, 0); }) ==
        "config: data.tokenizer.vocab_size: must be in [0, 1048576], got 2097152");
}

TEST_CASE("run config: a warm-up as long as the run is clipped with a warning") {
  json j = minimal();
  j["schedule"] = {{"type", "cosine"}, {"warmup_steps", 2000}};
  TrainConfig c = parse_train_config(j);
  CHECK(c.schedule.warmup_steps == 999);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] == "schedule.warmup_steps 2000 is not below train.steps 1000; warming up over 999 steps instead");
  CHECK(c.to_json()["schedule"]["warmup_steps"] == 999);  // the resolved config says what runs
  j["schedule"]["warmup_steps"] = 10;
  CHECK(parse_train_config(j).warnings.empty());
}

TEST_CASE("run config: --set edits nested keys with JSON or string values") {
  json j = minimal();
  apply_override(j, "train.steps=20");
  apply_override(j, "model.attention.type=mgk");
  apply_override(j, "optimizer.lr=3e-4");
  apply_override(j, "model.tie_embeddings=true");
  CHECK(j["train"]["steps"] == 20);
  CHECK(j["model"]["attention"]["type"] == "mgk");
  CHECK(j["optimizer"]["lr"] == 3e-4);
  CHECK(j["model"]["tie_embeddings"] == true);
  CHECK(error_of([&] { apply_override(j, "train.steps"); }).find("expected key=value") != std::string::npos);
  CHECK(error_of([&] { apply_override(j, "=3"); }).find("expected key=value") != std::string::npos);
  CHECK(error_of([&] { apply_override(j, "train..steps=3"); }).find("empty part") != std::string::npos);
  CHECK(error_of([&] { apply_override(j, "train.steps.x=3"); }) == "--set train.steps.x=3: 'steps' is not a section");
  json number = 5;  // found by tests/fuzz/fuzz_config: nlohmann's type_error 305 escaped
  CHECK(error_of([&] { apply_override(number, "a=1"); }) == "--set a=1: the config is not a JSON object");
}

TEST_CASE("run config: --set values nested too deep are refused, not kept as strings") {
  json j = minimal();
  CHECK(error_of([&] { apply_override(j, "train.steps=" + std::string(100000, '[')); }) ==
        "--set train.steps: JSON nested deeper than 64 levels of arrays and objects");
  apply_override(j, "name=[unclosed");  // not JSON: a bare word, as before
  CHECK(j["name"] == "[unclosed");
}

TEST_CASE("run config: config files must be regular files of JSON nested at most 64 deep") {
  ks::testing::TempDir dir;
  const std::string d = dir.path().string();
  CHECK(error_of([&] { read_json_file(d); }) == "config: " + d + " is a directory, expected a file");
  CHECK(error_of([] { read_json_file("/dev/zero"); }) ==
        "config: /dev/zero is not a regular file (it is a character device)");
  const std::string fifo = d + "/c.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error_of([&] { read_json_file(fifo); }) == "config: " + fifo + " is not a regular file (it is a FIFO)");
  ks::testing::write_text(dir / "deep.json", std::string(200000, '[') + std::string(200000, ']'));
  CHECK(error_of([&] { read_json_file(d + "/deep.json"); }) ==
        d + "/deep.json: JSON nested deeper than 64 levels of arrays and objects");
  ks::testing::write_text(dir / "bad.json", "{\"a\": tru}");
  CHECK(error_of([&] { read_json_file(d + "/bad.json"); }) ==
        d + "/bad.json: not valid JSON: line 1, column 10: syntax error while parsing value - invalid literal; last "
            "read: '\"a\": tru}'");
}

TEST_CASE("run config: a wrong-typed model.d_model is left to the model's validation, not a type_error") {
  json j = minimal();
  j["model"] = {{"d_model", "big"}};
  CHECK(config_error(j) == "no error");
}

TEST_CASE("run config: a megabyte value of the wrong type gives a short message") {
  const std::string big(1 << 20, 'x');
  std::string cut(80, 'x');  // the excerpt: a quote, 79 characters and "..."
  cut[0] = '"';
  cut += "...";
  CHECK(config_error({{"data", {{"dataset", "seq2seq"}}}, {"train", {{"steps", big}}}}) ==
        "config: train.steps: expected an integer, got " + cut);
  CHECK(config_error({{"data", {{"dataset", "seq2seq"}}}, {"train", big}}) ==
        "config: train: expected an object, got " + cut);
  CHECK(error_of([&] {
          build_data({{"dataset", "tsv_classification"}, {"train", "/x"}, {"classes", big}}, 0);
        }) == "config: data.classes: expected a list of strings, got " + cut);
}

TEST_CASE("data setup: unknown data sets and keys are named, generators resolve their defaults") {
  CHECK(error_of([] {
          build_data({{"dataset", "imagenet"}}, 0);
        })
            .find("config: data.dataset: unknown data set 'imagenet' "
                  "(known: brown_genre,") == 0);
  CHECK(error_of([] {
          build_data({{"dataset", "seq2seq"}, {"lenght", 3}}, 0);
        }) == "config: data.lenght: unknown key for dataset 'seq2seq'");
  CHECK(error_of([] { build_data({{"dataset", "seq2seq"}, {"task", "fly"}}, 0); }).find("fly") != std::string::npos);
  CHECK(error_of([] { build_data({{"dataset", "text"}}, 0); }) == "config: data.train: required (a file path)");
  CHECK(error_of([] {
          build_data({{"dataset", "text"}, {"train", "/nonexistent/x.txt"}}, 0);
        }).find("/nonexistent/x.txt") != std::string::npos);
  CHECK(error_of([] {
          build_data({{"dataset", "fashion_mnist"}, {"dir", "/nonexistent"}}, 0);
        }).find("/nonexistent") != std::string::npos);

  TrainingData d = build_data(
      {{"dataset", "seq2seq"}, {"task", "sort"}, {"train_size", 20}, {"valid_size", 5}, {"test_size", 5}}, 7);
  CHECK(d.splits.train.size() == 20);
  CHECK(d.resolved["seed"] == 7);  // a generator's seed defaults to the run's
  CHECK(d.resolved["max_length"] == 10);
  CHECK(d.resolved["task"] == "sort");
}

TEST_CASE("data setup: the model section gets its sizes from the data, and too-small ones are refused") {
  TrainingData d = build_data({{"dataset", "seq2seq"},
                               {"task", "copy"},
                               {"max_length", 7},
                               {"train_size", 20},
                               {"valid_size", 5},
                               {"test_size", 5}},
                              0);
  json m = complete_model_section(json::object(), d.splits);
  CHECK(m["model"] == "seq2seq");
  CHECK(m["src_vocab_size"] == d.splits.train.vocab_size);
  CHECK(m["max_len"] == 8);  // 7 symbols + eos
  CHECK(error_of([&] {
          complete_model_section({{"model", "decoder_lm"}}, d.splits);
        }).find("config: model.model: \"decoder_lm\" cannot be trained on a seq2seq data set") == 0);
  CHECK(error_of([&] {
          complete_model_section({{"max_len", 4}}, d.splits);
        }) == "config: model.max_len: 4 is too small; the data's longest sequence (plus bos/eos) needs at least 8");

  ks::testing::TempDir cache;
  TrainingData lo = build_data({{"dataset", "listops"},
                                {"min_length", 5},
                                {"max_length", 20},
                                {"max_depth", 3},
                                {"train_size", 10},
                                {"valid_size", 2},
                                {"test_size", 2},
                                {"cache_dir", cache.path().string()}},
                               0);
  json c = complete_model_section({{"pooling", "cls"}}, lo.splits);
  CHECK(c["model"] == "encoder_classifier");
  CHECK(c["num_classes"] == 10);
  CHECK(c["pad_id"] == 0);
  CHECK(c["vocab_size"] == 19);
  CHECK(c["max_len"].get<int64_t>() <= 21);
}

TEST_CASE("config keys: an unknown key names its section and the near miss it is, in every section") {
  json j = minimal();
  j["train"] = {{"stpes", 3}};  // two letters swapped
  CHECK(config_error(j) == "config: train.stpes: unknown key (did you mean train.steps?)");
  j = minimal();
  j["optimizer"] = {{"type", "sgd"}, {"momentun", 0.5}};
  CHECK(config_error(j) ==
        "config: optimizer.momentun: unknown key for optimizer 'sgd' (did you mean optimizer.momentum?)");
  j = minimal();
  j["schedule"] = {{"warmup", 3}};
  CHECK(config_error(j) == "config: schedule.warmup: unknown key");  // too far from warmup_steps to guess
  CHECK(error_of([] {
          build_data({{"dataset", "seq2seq"}, {"tsak", "copy"}}, 0);
        }) == "config: data.tsak: unknown key for dataset 'seq2seq' (did you mean data.task?)");
  CHECK(error_of([] {
          build_data({{"dataset", "text"}, {"train", "/x"}, {"tokenizer", {{"tpye", "word"}}}}, 0);
        }) == "config: data.tokenizer.tpye: unknown key (did you mean data.tokenizer.type?)");
  CHECK(error_of([] {
          build_data({{"dataset", "seq2sq"}}, 0);
        }).find("unknown data set 'seq2sq' (did you mean seq2seq?") != std::string::npos);
  // The model section, completed from the data, names its keys as model.<key>.
  TrainingData d = build_data({{"dataset", "seq2seq"}, {"train_size", 4}, {"valid_size", 2}, {"test_size", 2}}, 0);
  CHECK(error_of([&] {
          complete_model_section({{"d_modle", 16}}, d.splits);
        }) == "config: model.d_modle: unknown key for model 'seq2seq' (did you mean model.d_model?)");
  CHECK(error_of([&] {
          complete_model_section({{"attention", {{"haeds", 2}}}}, d.splits);
        }) == "config: model.attention.haeds: unknown key (did you mean model.attention.heads?)");
  CHECK(error_of([&] {
          complete_model_section({{"dropout", 2}}, d.splits);
        }) == "config: model.dropout: must be in [0, 1), got 2");
}

namespace {
// Every dotted key path of a resolved section ("train.steps", "attention.type").
void key_paths(const json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (auto& [key, value] : j.items()) {
    out.push_back(prefix + key);
    if (value.is_object()) key_paths(value, prefix + key + ".", out);
  }
}
}  // namespace

TEST_CASE("config keys: every key a config resolves to has its meaning in the table its reader uses") {
  std::map<std::string, std::string> docs;
  for (const KeyDoc& k : train_config_keys()) docs[k.key] = k.doc;
  for (const char* optimizer : {"adamw", "sgd"}) {
    json j = minimal();
    j["optimizer"] = {{"type", optimizer}};
    std::vector<std::string> keys;
    json resolved = parse_train_config(j).to_json();
    resolved.erase("data");
    resolved.erase("model");
    key_paths(resolved, "", keys);
    for (const std::string& k : keys) {
      CAPTURE(k);
      CHECK_FALSE(docs[k].empty());
    }
  }
  for (const std::string name : {"seq2seq", "listops", "brown_lm", "brown_genre", "fashion_mnist", "text",
                                 "tsv_classification", "tsv_seq2seq"}) {
    CAPTURE(name);
    json section = {{"dataset", name}};
    json data_docs;
    std::vector<std::string> keys;
    key_paths(describe_data(section, &data_docs), "", keys);
    if (name == "tsv_seq2seq") {  // and with a target tokenizer given, its keys too
      section["target_tokenizer"] = json::object();
      key_paths(describe_data(section, &data_docs), "", keys);
    }
    for (const std::string& k : keys) {
      CAPTURE(k);
      CHECK(data_docs.contains(k));
    }
  }
  // tsv_seq2seq's target_tokenizer is absent by default, and --defaults shows it so, with its meaning.
  json tsv_docs;
  const json tsv = describe_data({{"dataset", "tsv_seq2seq"}}, &tsv_docs);
  CHECK(tsv.value("target_tokenizer", json()) == "<absent>");
  CHECK(tsv_docs.contains("target_tokenizer"));
  for (const json& model : {json{{"model", "decoder_lm"}, {"vocab_size", 8}},
                            json{{"model", "encoder_classifier"}, {"vocab_size", 8}, {"num_classes", 2}},
                            json{{"model", "seq2seq"}, {"src_vocab_size", 8}, {"tgt_vocab_size", 8}}}) {
    const std::string family = model["model"];
    CAPTURE(family);
    std::map<std::string, std::string> model_docs;
    for (const KeyDoc& k : models::model_keys(family)) model_docs[k.key] = k.doc;
    std::vector<std::string> keys;
    key_paths(models::parse_model_config(model).to_json(), "", keys);
    for (const std::string& k : keys) {
      CAPTURE(k);
      CHECK_FALSE(model_docs[k].empty());
    }
  }
}

TEST_CASE("config keys: a model the data set's task cannot train is refused without data, as train refuses it") {
  CHECK(error_of([] {
          check_model_for_data_set({{"model", "seq2seq"}}, "fashion_mnist");
        }) ==
        "config: model.model: \"seq2seq\" cannot be trained on a classification data set (use \"encoder_classifier\")");
  CHECK(error_of([] { check_model_for_data_set({{"model", "encoder_classifier"}}, "fashion_mnist"); }) == "no error");
  CHECK(error_of([] { check_model_for_data_set(json::object(), "seq2seq"); }) == "no error");
  TrainingData d = build_data({{"dataset", "seq2seq"}, {"train_size", 4}, {"valid_size", 2}, {"test_size", 2}}, 0);
  CHECK(error_of([&] {
          complete_model_section({{"model", "decoder_lm"}}, d.splits);
        }) == error_of([] {
          check_model_for_data_set({{"model", "decoder_lm"}}, "seq2seq");
        }));
}

TEST_CASE("run config: train.loss_scale is dynamic with fp16, none otherwise, a number is static, bad values named") {
  json j = minimal();
  CHECK(parse_train_config(j).train.loss_scale == "none");
  CHECK(parse_train_config(j).to_json()["train"]["loss_scale"] == "none");
  j["train"] = {{"precision", "fp16"}};
  TrainConfig c = parse_train_config(j);
  CHECK(c.train.precision == "fp16");
  CHECK(c.train.loss_scale == "dynamic");
  json back = c.to_json();
  CHECK(back["train"]["loss_scale"] == "dynamic");
  CHECK(back["train"]["loss_scale_init"] == 65536.0);
  CHECK(back["train"]["loss_scale_growth_factor"] == 2.0);
  CHECK(back["train"]["loss_scale_backoff_factor"] == 0.5);
  CHECK(back["train"]["loss_scale_growth_interval"] == 2000);
  CHECK(parse_train_config(back).to_json() == back);
  j["train"] = {{"precision", "fp16"}, {"loss_scale", "none"}};
  CHECK(parse_train_config(j).train.loss_scale == "none");
  j["train"] = {{"precision", "bf16"}, {"loss_scale", "dynamic"}, {"loss_scale_growth_interval", 10}};
  CHECK(parse_train_config(j).train.loss_scale == "dynamic");
  CHECK(parse_train_config(j).train.loss_scale_growth_interval == 10);
  j["train"] = {{"loss_scale", 1024}};
  c = parse_train_config(j);
  CHECK(c.train.loss_scale == "static");
  CHECK(c.train.static_loss_scale == 1024);
  CHECK(c.to_json()["train"]["loss_scale"] == 1024.0);
  CHECK(parse_train_config(c.to_json()).to_json() == c.to_json());

  j["train"] = {{"loss_scale", "dynamc"}};
  CHECK(config_error(j) ==
        "config: train.loss_scale: expected \"dynamic\", \"none\" or a positive number (a static scale), got "
        "\"dynamc\"");
  j["train"] = {{"loss_scale", -2}};
  CHECK(config_error(j).starts_with("config: train.loss_scale: expected \"dynamic\""));
  j["train"] = {{"loss_scale", 0}};
  CHECK(config_error(j).starts_with("config: train.loss_scale: expected \"dynamic\""));
  j["train"] = {{"loss_scale_init", 0}};
  CHECK(config_error(j) == "config: train.loss_scale_init: must be a positive number, got 0");
  j["train"] = {{"loss_scale_growth_factor", 1}};
  CHECK(config_error(j) == "config: train.loss_scale_growth_factor: must be > 1, got 1");
  j["train"] = {{"loss_scale_backoff_factor", 1.5}};
  CHECK(config_error(j) == "config: train.loss_scale_backoff_factor: must be in (0, 1), got 1.5");
  j["train"] = {{"loss_scale_growth_interval", 0}};
  CHECK(config_error(j) == "config: train.loss_scale_growth_interval: must be in [1, 1099511627776], got 0");
  j["train"] = {{"loss_scale_growth_interval", "often"}};
  CHECK(config_error(j) == "config: train.loss_scale_growth_interval: expected an integer, got \"often\"");
  j["train"] = {{"loss_scal", 2}};
  CHECK(config_error(j) == "config: train.loss_scal: unknown key (did you mean train.loss_scale?)");
  // Every key is documented where `keystone config --defaults` reads the docs.
  int documented = 0;
  for (const KeyDoc& k : train_config_keys())
    if (k.key.starts_with("train.loss_scale")) documented += !k.doc.empty();
  CHECK(documented == 5);
}

TEST_CASE("progress: the line naming where bf16 GEMMs run, and that they run in float32 without a bf16 unit") {
  const std::string none = "this CPU has no bf16 units (AVX2)";  // float32_path_reason's, on issue 32's Zen 3
  CHECK(format_gemm_path("float32", "cpu", CpuGemmPath::Float32, false, none).empty());
  CHECK(format_gemm_path("bf16", "cpu", CpuGemmPath::Float32, true, "") ==
        "train.precision bf16: KS_CPU_GEMM chose the float32 path: GEMMs run in float32, results equal float32's "
        "bit for bit (keystone info --machine)");
  CHECK(format_gemm_path("bf16", "cpu", CpuGemmPath::Float32, false, none) ==
        "train.precision bf16: this CPU has no bf16 units (AVX2): GEMMs run in float32, results equal float32's "
        "bit for bit (keystone info --machine)");
  CHECK(format_gemm_path("auto", "cpu", CpuGemmPath::Float32, false, none)
            .rfind("train.precision auto: this CPU has no bf16 units (AVX2): GEMMs run in float32", 0) == 0);
  CHECK(format_gemm_path("bf16", "cpu", CpuGemmPath::Amx, false, "") ==
        "train.precision bf16: GEMMs on the CPU's AMX tiles (amx path)");
  CHECK(format_gemm_path("auto", "cpu", CpuGemmPath::Avx512Bf16, false, "") ==
        "train.precision auto: GEMMs with AVX512-BF16 (avx512bf16 path)");
  CHECK(format_gemm_path("bf16", "cpu", CpuGemmPath::Avx512Bf16, true, "") ==
        "train.precision bf16: GEMMs with AVX512-BF16 (avx512bf16 path, chosen by KS_CPU_GEMM)");
  CHECK(format_gemm_path("tf32", "cuda", CpuGemmPath::Float32, false, none) ==
        "train.precision tf32: GEMMs on the GPU's tensor cores in TF32, float32 sums");
  CHECK(format_gemm_path("auto", "cuda", CpuGemmPath::Float32, false, none) ==
        "train.precision auto: GEMMs in bf16 on the GPU (cuBLAS), float32 sums");
  // fp16 on the CPU is an emulation, and the line says so whatever the bf16 path.
  for (CpuGemmPath path : {CpuGemmPath::Float32, CpuGemmPath::Amx})
    CHECK(format_gemm_path("fp16", "cpu", path, false, none)
              .starts_with("train.precision fp16: EMULATED on the CPU (no fp16 units used): GEMM operands rounded "
                           "to fp16, then float32 GEMMs; slower than float32"));
  CHECK(format_gemm_path("fp16", "cuda", CpuGemmPath::Float32, false, none) ==
        "train.precision fp16: GEMMs in fp16 on the GPU (cuBLAS), float32 sums");
}

TEST_CASE("progress: durations, counts and the progress line") {
  CHECK(format_duration(45) == "45s");
  CHECK(format_duration(192) == "3m12s");
  CHECK(format_duration(7500) == "2h05m");
  CHECK(format_count(950) == "950");
  CHECK(format_count(5100) == "5.1k");
  CHECK(format_count(2.3e6) == "2.3M");
  std::string line = format_progress(
      {.step = 50, .total = 200, .loss = 1.5, .lr = 3e-4, .tokens_per_s = 5100, .elapsed_s = 10, .eta_s = 30});
  CHECK(line == "[#####...............] 50/200  25% | loss 1.5000 | 5.1k tok/s | lr 3.00e-04 | 10s | ETA 30s");
  // With a loss scaler: its scale and the steps it skipped.
  line = format_progress({.step = 50,
                          .total = 200,
                          .loss = 1.5,
                          .lr = 3e-4,
                          .tokens_per_s = 5100,
                          .elapsed_s = 10,
                          .eta_s = 30,
                          .loss_scale = 32768,
                          .skipped_steps = 3});
  CHECK(line ==
        "[#####...............] 50/200  25% | loss 1.5000 | 5.1k tok/s | lr 3.00e-04 | scale 32768 (3 skipped) | 10s | "
        "ETA 30s");
  CHECK(format_metrics({{"loss", 2.0}, {"ppl", 7.389}, {"accuracy", 0.5}}) == "loss 2.0000 | ppl 7.4 | acc 50.00%");
}
