// tests/nn/test_optim.cpp — optimizers against scalar re-implementations of
// torch.optim's formulas (also on bfloat16 and float16 parameters), state
// round trips, clipping and schedules.
#include "support/testing.h"

#include <cmath>
#include <memory>
#include <set>

#include "nn/lr_schedule.h"
#include "nn/optim.h"
#include "nn/transformer.h"

using namespace ks;
using namespace ks::testing;

namespace {

// Gradient of L = Σ c_i p_i² at p: 2 c_i p_i (a fixed, elementwise quadratic).
std::vector<double> quad_grad(const std::vector<double>& p) {
  std::vector<double> g(p.size());
  for (size_t i = 0; i < p.size(); ++i) g[i] = 2.0 * double(i + 1) * p[i];
  return g;
}
Tensor quad_loss(const Tensor& p) {
  Tensor c = arange(1, double(p.numel()) + 1, 1, {.dtype = p.dtype()});
  return sum(mul(mul(p, p), c));
}

// `n` steps of opt on the quadratic loss of p.
void quad_steps(const Tensor& p, nn::Optimizer& opt, int n) {
  for (int i = 0; i < n; ++i) {
    backward(quad_loss(p));
    opt.step();
    opt.zero_grad();
  }
}

// A resume: an AdamW with options `o` takes three steps on a; b, a copy of a, gets a second AdamW that
// loads the first's state; then both take three more. Their weights must agree bit for bit.
// Returns the two optimizers, a and b.
struct Resumed {
  Tensor a, b;
  std::unique_ptr<nn::AdamW> oa, ob;
};
Resumed resume_alongside(const nn::AdamOptions& o) {
  Resumed r{tensor({1, -2, 3}, {3}, {.requires_grad = true}), tensor({1, -2, 3}, {3}, {.requires_grad = true})};
  r.oa = std::make_unique<nn::AdamW>(std::vector<Tensor>{r.a}, o);
  quad_steps(r.a, *r.oa, 3);
  {
    NoGradGuard g;
    copy_(r.b, r.a);
  }
  r.ob = std::make_unique<nn::AdamW>(std::vector<Tensor>{r.b}, o);
  r.ob->load_state_dict(r.oa->state_dict());
  CHECK(r.ob->steps_taken() == 3);
  for (int i = 0; i < 3; ++i) {
    quad_steps(r.a, *r.oa, 1);
    quad_steps(r.b, *r.ob, 1);
  }
  CHECK(r.a.to_vector<float>() == r.b.to_vector<float>());
  return r;
}

}  // namespace

TEST_CASE("Adam and AdamW follow torch.optim's update for ten steps") {
  for (bool decoupled : {false, true}) {
    CAPTURE(decoupled);
    std::vector<double> ref = {0.5, -1.0, 2.0, 0.1};
    Tensor p = from_vector(ref);
    p.set_requires_grad(true);
    nn::AdamOptions o{.lr = 0.1, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6, .weight_decay = 0.05};
    std::unique_ptr<nn::Optimizer> opt = decoupled ? std::unique_ptr<nn::Optimizer>(new nn::AdamW({p}, o))
                                                   : std::unique_ptr<nn::Optimizer>(new nn::Adam({p}, o));
    std::vector<double> m(4, 0), v(4, 0);
    for (int t = 1; t <= 10; ++t) {
      backward(quad_loss(p));
      opt->step();
      opt->zero_grad();
      std::vector<double> g = quad_grad(ref);
      for (size_t i = 0; i < 4; ++i) {
        if (decoupled)
          ref[i] *= 1 - o.lr * o.weight_decay;
        else
          g[i] += o.weight_decay * ref[i];
        m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
        v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
        double mhat = m[i] / (1 - std::pow(o.beta1, t));
        double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps;
        ref[i] -= o.lr * mhat / denom;
      }
    }
    check_close(p, ref, 1e-5, 1e-4);
  }
}

TEST_CASE("SGD with momentum, Nesterov and weight decay follows torch.optim") {
  for (bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    std::vector<double> ref = {0.5, -1.0, 2.0};
    Tensor p = from_vector(ref, {}, Device::cpu());
    Tensor p64 = to_raw(p, Device::cpu(), kFloat64);
    p64.set_requires_grad(true);
    nn::SGD opt({p64}, {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1, .nesterov = nesterov});
    std::vector<double> buf(3, 0);
    for (int t = 1; t <= 10; ++t) {
      backward(quad_loss(p64));
      opt.step();
      opt.zero_grad();
      std::vector<double> g = quad_grad(ref);
      for (size_t i = 0; i < 3; ++i) {
        double d = g[i] + 0.1 * ref[i];
        buf[i] = t == 1 ? d : 0.9 * buf[i] + d;
        d = nesterov ? d + 0.9 * buf[i] : buf[i];
        ref[i] -= 0.05 * d;
      }
    }
    check_close(p64, ref, 1e-12, 1e-10);
  }
  Tensor q = zeros({2}, {.requires_grad = true});
  CHECK_THROWS_WITH_AS(nn::SGD({q}, {.nesterov = true}), "SGD: Nesterov momentum needs momentum > 0 and dampening 0",
                       Error);
}

namespace {

// x rounded to `dt` (through float32, as the kernels store it).
std::vector<double> rounded(const std::vector<double>& x, DType dt) {
  return to_raw(to_raw(from_vector(x), Device::cpu(), kFloat32), Device::cpu(), dt).to_vector<double>();
}
// The optimizer's state slot whose name ends with `slot`.
std::vector<double> state_of(const nn::Optimizer& opt, const std::string& slot) {
  for (const auto& [name, t] : opt.state_dict())
    if (name.size() > slot.size() && name.ends_with("." + slot)) return t.to_vector<double>();
  FAIL("no state slot " << slot);
  return {};
}
// Within one unit in the last place of `dt`: 2^-7 relative for bfloat16, 2^-10
// for float16, whose subnormals (below 2^-14) are 2^-24 apart.
void check_within_ulp(const std::vector<double>& got, const std::vector<double>& want, DType dt) {
  REQUIRE(got.size() == want.size());
  const double rel = dt == kBFloat16 ? 0x1p-7 : 0x1p-10, subnormal = dt == kBFloat16 ? 0x1p-133 : 0x1p-24;
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= rel * std::abs(want[i]) + subnormal);
  }
}

}  // namespace

TEST_CASE("Adam, AdamW and SGD update 16-bit parameters in float32, their state rounded once a step") {
  for (DType dt : {kBFloat16, kFloat16}) {
    for (int kind : {0, 1, 2}) {  // Adam, AdamW, SGD with Nesterov momentum
      CAPTURE(name(dt));
      CAPTURE(kind);
      Tensor p = to_raw(from_vector(std::vector<double>{0.5, -1.0, 2.0, 0.1}), Device::cpu(), dt);
      p.set_requires_grad(true);
      const nn::AdamOptions ao{.lr = 0.1, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6, .weight_decay = 0.05};
      const nn::SGDOptions so{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true};
      std::unique_ptr<nn::Optimizer> opt;
      if (kind == 0) opt.reset(new nn::Adam({p}, ao));
      if (kind == 1) opt.reset(new nn::AdamW({p}, ao));
      if (kind == 2) opt.reset(new nn::SGD({p}, so));
      for (int t = 1; t <= 5; ++t) {
        CAPTURE(t);
        // One step from the stored (rounded) values, in double, each result rounded to dt.
        const std::vector<double> p0 = p.to_vector<double>();
        backward(quad_loss(p));
        std::vector<double> g = p.grad().to_vector<double>();
        CHECK(p.grad().dtype() == dt);
        std::vector<double> m =
            t == 1 ? std::vector<double>(4, 0) : state_of(*opt, kind == 2 ? "momentum_buffer" : "exp_avg");
        std::vector<double> v = t == 1 || kind == 2 ? std::vector<double>(4, 0) : state_of(*opt, "exp_avg_sq");
        std::vector<double> want = p0;
        for (size_t i = 0; i < 4; ++i) {
          if (kind == 2) {
            const double d = g[i] + so.weight_decay * p0[i];
            m[i] = t == 1 ? d : so.momentum * m[i] + d;
            want[i] = p0[i] - so.lr * (d + so.momentum * m[i]);
            continue;
          }
          if (kind == 1)
            want[i] *= 1 - ao.lr * ao.weight_decay;
          else
            g[i] += ao.weight_decay * p0[i];
          m[i] = ao.beta1 * m[i] + (1 - ao.beta1) * g[i];
          v[i] = ao.beta2 * v[i] + (1 - ao.beta2) * g[i] * g[i];
          const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(ao.beta2, t)) + ao.eps;
          want[i] -= ao.lr * m[i] / (1 - std::pow(ao.beta1, t)) / denom;
        }
        opt->step();
        opt->zero_grad();
        CHECK(p.dtype() == dt);
        check_within_ulp(p.to_vector<double>(), rounded(want, dt), dt);
        check_within_ulp(state_of(*opt, kind == 2 ? "momentum_buffer" : "exp_avg"), rounded(m, dt), dt);
        if (kind != 2) check_within_ulp(state_of(*opt, "exp_avg_sq"), rounded(v, dt), dt);
      }
    }
  }
}

TEST_CASE(
    "AdamW with bf16 moments (state_dtype): float32 weights updated from the unrounded moments, each moment "
    "stored as one of its two bf16 neighbours") {
  // Ten steps on the quadratic, against the same formulas in double from the stored moments.
  Tensor p = tensor({0.5, -1.0, 2.0, 0.1, 3.0, -0.25}, {6}, {.requires_grad = true});
  const nn::AdamOptions ao{
      .lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01, .state_dtype = kBFloat16};
  nn::AdamW opt({p}, ao);
  for (int t = 1; t <= 10; ++t) {
    CAPTURE(t);
    const std::vector<double> p0 = p.to_vector<double>();
    backward(quad_loss(p));
    const std::vector<double> g = p.grad().to_vector<double>();
    std::vector<double> m = t == 1 ? std::vector<double>(6, 0) : state_of(opt, "exp_avg");
    std::vector<double> v = t == 1 ? std::vector<double>(6, 0) : state_of(opt, "exp_avg_sq");
    std::vector<double> want = p0;
    for (size_t i = 0; i < 6; ++i) {
      want[i] *= 1 - ao.lr * ao.weight_decay;
      m[i] = ao.beta1 * m[i] + (1 - ao.beta1) * g[i];
      v[i] = ao.beta2 * v[i] + (1 - ao.beta2) * g[i] * g[i];
      want[i] -= ao.lr * m[i] / (1 - std::pow(ao.beta1, t)) / (std::sqrt(v[i] / (1 - std::pow(ao.beta2, t))) + ao.eps);
    }
    opt.step();
    opt.zero_grad();
    check_close(p, want, 1e-5);
    for (const char* slot : {"exp_avg", "exp_avg_sq"}) {
      const nn::NamedTensors st = opt.state_dict();
      const Tensor s =
          std::find_if(st.begin(), st.end(), [&](const auto& e) { return e.first == str("0.0.", slot); })->second;
      CHECK(s.dtype() == kBFloat16);
      const std::vector<double> got = state_of(opt, slot), exact = std::string(slot) == "exp_avg" ? m : v;
      for (size_t i = 0; i < 6; ++i) {
        // The two bfloat16 values around the float32 result (truncation, and one ulp up in magnitude).
        const float x = float(exact[i]);
        BFloat16 down;
        down.bits = uint16_t(float_bits(x) >> 16);
        BFloat16 up = down;
        up.bits = uint16_t(up.bits + ((float_bits(x) & 0xffffu) != 0 ? 1 : 0));
        CHECK((got[i] == double(float(down)) || got[i] == double(float(up))));
      }
    }
  }
}

TEST_CASE("bf16 moments round up in proportion: unbiased, and the same draws on a second run") {
  // 4,096 equal gradients: after one step m = 0.1·g everywhere; the share stored rounded up (in magnitude)
  // is the fraction of the way 0.1·g lies between its two bfloat16 neighbours.
  const int64_t n = 4096;
  auto run = [&] {
    Tensor p = full({n}, 1.0f, {.requires_grad = true});
    nn::AdamW opt({p}, {.lr = 1e-3, .weight_decay = 0, .state_dtype = kBFloat16});
    p.set_grad(full({n}, 1.2345f));
    opt.step();
    return state_of(opt, "exp_avg");
  };
  const std::vector<double> m = run();
  CHECK(m == run());                     // the draws depend on the parameter, its step and the element only
  const float x = float(0.1) * 1.2345f;  // what the kernel computes: (1 - beta1)·g in float32
  BFloat16 down;
  down.bits = uint16_t(float_bits(x) >> 16);
  const double lo = double(float(down)), frac = double(float_bits(x) & 0xffffu) / 65536.0;
  int64_t ups = 0;
  for (double e : m) {
    REQUIRE((e == lo || e > lo));
    ups += e > lo ? 1 : 0;
  }
  // Binomial(n, frac): within 5 standard deviations.
  const double sd = std::sqrt(double(n) * frac * (1 - frac));
  CHECK(std::abs(double(ups) - double(n) * frac) < 5 * sd);
  CHECK(frac > 0.05);  // the test means something: x is far from both neighbours
}

TEST_CASE("bf16 moments: the state round trip resumes exactly, and a float32 state is refused by name") {
  const nn::AdamOptions bf{.lr = 0.05, .state_dtype = kBFloat16};
  Resumed r = resume_alongside(bf);
  CHECK(state_of(*r.oa, "exp_avg") == state_of(*r.ob, "exp_avg"));
  Tensor b = r.b;
  nn::AdamW& oa = *r.oa;
  nn::AdamW f32({b}, {.lr = 0.05});
  CHECK_THROWS_WITH_AS(f32.load_state_dict(oa.state_dict()),
                       doctest::Contains("'0.0.exp_avg' is bfloat16 but its parameter is float32"), Error);
  quad_steps(b, f32, 1);
  nn::AdamW other({b}, bf);
  CHECK_THROWS_WITH_AS(other.load_state_dict(f32.state_dict()),
                       doctest::Contains("is float32 but this optimizer keeps its state in bfloat16"), Error);
  CHECK_THROWS_WITH_AS(nn::AdamW({b}, {.state_dtype = kFloat16}),
                       doctest::Contains("state_dtype must be float32 or bf16"), Error);
}

TEST_CASE("clip_grad_norm on 16-bit gradients sums their squares in double") {
  for (DType dt : {kBFloat16, kFloat16}) {
    CAPTURE(name(dt));
    Tensor a = to_raw(zeros({2}), Device::cpu(), dt);
    a.set_requires_grad(true);
    a.set_grad(to_raw(tensor({3, 0}), Device::cpu(), dt));
    CHECK(nn::clip_grad_norm({a}, 1.0) == doctest::Approx(3.0));
    CHECK(a.grad().dtype() == dt);
    check_close(a.grad(), {1.0, 0}, 1e-3);
  }
}

TEST_CASE("optimizer state round trip continues the same trajectory") {
  Resumed r = resume_alongside({.lr = 0.05});
  nn::AdamW &oa = *r.oa, &ob = *r.ob;
  nn::NamedTensors bad = oa.state_dict();
  bad.emplace_back("7.0.exp_avg", zeros({3}));
  CHECK_THROWS_WITH_AS(ob.load_state_dict(bad), doctest::Contains("do not belong"), Error);
}

TEST_CASE("Adam's bias correction counts each parameter's own updates, as torch.optim's state['step']") {
  // a has a gradient at every step, b only at steps 2 and 4: b's second update
  // is its t = 2 (PyTorch), not the optimizer's fourth step() call.
  Tensor a = tensor({1, -2}, {2}, {.requires_grad = true}), b = tensor({0.5, 3}, {2}, {.requires_grad = true});
  nn::AdamOptions o{.lr = 0.1, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6, .weight_decay = 0.05};
  nn::AdamW opt({a, b}, o);
  std::vector<double> ref = {0.5, 3}, m(2, 0), v(2, 0);
  int t = 0;
  for (int step = 1; step <= 4; ++step) {
    const bool b_in = step % 2 == 0;
    backward(b_in ? add(quad_loss(a), quad_loss(b)) : quad_loss(a));
    opt.step();
    opt.zero_grad();
    if (!b_in) continue;
    ++t;
    std::vector<double> g = quad_grad(ref);
    for (size_t i = 0; i < 2; ++i) {
      ref[i] *= 1 - o.lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
      ref[i] -=
          o.lr * (m[i] / (1 - std::pow(o.beta1, t))) / (std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps);
    }
  }
  check_close(b, ref, 1e-6, 1e-5);
  CHECK(opt.steps_taken() == 4);
  CHECK(opt.param_steps(0, 0) == 4);
  CHECK(opt.param_steps(0, 1) == 2);
  // Saved and restored with the rest of the state.
  const nn::NamedTensors state = opt.state_dict();
  Tensor a2 = tensor({1, -2}, {2}, {.requires_grad = true}), b2 = tensor({0.5, 3}, {2}, {.requires_grad = true});
  nn::AdamW restored({a2, b2}, o);
  restored.load_state_dict(state);
  CHECK(restored.param_steps(0, 1) == 2);
  // A count past the optimizer's is damage, refused by name.
  nn::NamedTensors bad = state;
  for (auto& [name, t2] : bad)
    if (name == "0.1.step") t2 = from_vector(std::vector<int64_t>{9});
  CHECK_THROWS_WITH_AS(restored.load_state_dict(bad), doctest::Contains("'0.1.step' must be one whole number"), Error);
}

TEST_CASE("an optimizer state saved before per-parameter counts resumes with the optimizer's count, as it ran") {
  // Such a state is today's without its "<g>.<i>.step" entries: every parameter with
  // state continues from the optimizer's count, the one its updates used when saved.
  Tensor a = tensor({1, -2, 3}, {3}, {.requires_grad = true});
  nn::AdamW oa({a}, {.lr = 0.05});
  for (int i = 0; i < 3; ++i) {
    backward(quad_loss(a));
    oa.step();
    oa.zero_grad();
  }
  nn::NamedTensors old;
  for (const auto& [name, t] : oa.state_dict())
    if (name != "0.0.step") old.emplace_back(name, t);
  Tensor b = tensor({0, 0, 0}, {3}, {.requires_grad = true});
  {
    NoGradGuard g;
    copy_(b, a);
  }
  nn::AdamW ob({b}, {.lr = 0.05});
  ob.load_state_dict(old);
  CHECK(ob.param_steps(0, 0) == 3);
  backward(quad_loss(a));
  oa.step();
  backward(quad_loss(b));
  ob.step();
  CHECK(a.to_vector<float>() == b.to_vector<float>());
}

TEST_CASE("decay groups leave biases and norms undecayed, lr factor scales each group") {
  struct Net : nn::Module {
    Tensor w = register_parameter("w", zeros({2, 2})), b = register_parameter("b", zeros({2}));
  } net;
  auto groups = nn::decay_groups(net, 0.1);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].weight_decay == 0.1);
  CHECK(groups[1].weight_decay == 0);
  groups[1].lr = 0.5;
  nn::AdamW opt(groups, {.lr = 1.0});
  opt.set_lr_factor(0.1);
  CHECK(opt.lr(0) == doctest::Approx(0.1));
  CHECK(opt.lr(1) == doctest::Approx(0.05));
}

TEST_CASE("decay groups ask each module which of its parameters not to decay (Module::no_weight_decay)") {
  // A 2-d parameter its module exempts, one it does not, in a child module.
  struct Leaf : nn::Module {
    Tensor table = register_parameter("table", zeros({2, 2})), w = register_parameter("w", zeros({2, 2}));
    std::vector<std::string> no_weight_decay() const override { return {"table"}; }
  };
  struct Root : nn::Module {
    std::shared_ptr<Leaf> leaf = register_module("leaf", std::make_shared<Leaf>());
  } root;
  auto groups = nn::decay_groups(root, 0.1);
  REQUIRE(groups.size() == 2);
  REQUIRE(groups[1].params.size() == 1);
  CHECK(groups[1].params[0].is_same(root.leaf->table));
}

// The names of model's parameters in its undecayed group.
std::set<std::string> undecayed(const nn::Module& model) {
  std::set<std::string> out;
  for (const nn::ParamGroup& g : nn::decay_groups(model, 0.1))
    if (g.weight_decay == 0)
      for (const Tensor& p : g.params)
        for (const auto& [name, q] : model.named_parameters())
          if (q.is_same(p)) out.insert(name);
  return out;
}

TEST_CASE("decay groups do not decay MGK's and MLK's mixture logits or sMGK's shifts: the sets of before") {
  for (const char* type : {"softmax", "mgk", "smgk", "mlk", "linear"}) {
    CAPTURE(type);
    nn::LayerConfig cfg{.d_model = 8, .d_ff = 16, .attention = {.type = type, .heads = 2}};
    nn::DecoderLayer layer(cfg, /*cross_attention=*/true);
    // The rule decay_groups had by parameter name: 1-d, or named *pi_logits, *.mu or mu.
    std::set<std::string> by_name;
    for (const auto& named : layer.named_parameters()) {
      const std::string& name = named.first;  // not a structured binding: the lambda below reads it (clang 14)
      const Tensor& p = named.second;
      auto ends_with = [&](const std::string& tail) {
        return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (p.dim() < 2 || ends_with("pi_logits") || ends_with(".mu") || name == "mu") by_name.insert(name);
    }
    CHECK(undecayed(layer) == by_name);
    const bool logits = std::string(type) != "softmax" && std::string(type) != "linear";
    CHECK(undecayed(layer).count("self_attn.pi_logits") == (logits ? 1 : 0));
    CHECK(undecayed(layer).count("cross_attn.mu") == (std::string(type) == "smgk" ? 1 : 0));
  }
}

TEST_CASE("clip_grad_norm scales to the max norm and returns the old norm") {
  Tensor a = zeros({2}, {.requires_grad = true}), b = zeros({1}, {.requires_grad = true});
  a.set_grad(tensor({3, 0}));
  b.set_grad(tensor({4}));
  CHECK(nn::clip_grad_norm({a, b}, 1.0) == doctest::Approx(5.0));
  check_close(a.grad(), {0.6, 0}, 1e-6);
  check_close(b.grad(), {0.8}, 1e-6);
  CHECK(nn::clip_grad_norm({a, b}, 10.0) == doctest::Approx(1.0).epsilon(1e-5));  // below: untouched
}

TEST_CASE("learning-rate schedules") {
  nn::LRSchedule cos{.type = "cosine", .warmup_steps = 10, .total_steps = 110, .min_factor = 0.1};
  CHECK(cos.factor(5) == doctest::Approx(0.5));
  CHECK(cos.factor(10) == doctest::Approx(1.0));
  CHECK(cos.factor(60) == doctest::Approx(0.55));
  CHECK(cos.factor(110) == doctest::Approx(0.1));
  CHECK(cos.factor(500) == doctest::Approx(0.1));
  nn::LRSchedule lin{.type = "linear", .warmup_steps = 0, .total_steps = 100};
  CHECK(lin.factor(50) == doctest::Approx(0.5));
  nn::LRSchedule noam{.type = "noam", .warmup_steps = 4000, .d_model = 512};
  CHECK(noam.factor(4000) == doctest::Approx(std::pow(512, -0.5) * std::pow(4000, -0.5)));
  CHECK(noam.factor(100) == doctest::Approx(std::pow(512, -0.5) * 100 * std::pow(4000, -1.5)));
  CHECK_THROWS_WITH_AS((nn::LRSchedule{.type = "cosine", .warmup_steps = 10, .total_steps = 5}.validate()),
                       "lr schedule: total_steps (5) must exceed warmup_steps (10)", Error);
  CHECK_THROWS_AS(nn::check_schedule_type("step"), Error);
}
