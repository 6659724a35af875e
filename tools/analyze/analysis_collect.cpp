// tools/analyze/analysis_collect.cpp — AttentionCollector (tools/analyze/analysis_collect.h):
// per batch, each site's explicit weights, scores and head outputs copied to
// the CPU in float64 and folded into the running sums; the first examples'
// maps and spectra kept whole.
#include "tools/analyze/analysis_collect.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "ops/unary.h"
#include "ops/view.h"
#include "tools/analyze/analysis_math.h"
#include "tools/train/task.h"

namespace ks::tools {

namespace {

// A tensor as float64 values in row-major order, on the CPU.
std::vector<double> host_values(const Tensor& t) {
  Tensor c = t.device().is_cpu() ? t : to(t, Device::cpu());
  return c.to_vector<double>();
}

nlohmann::json spectrum_json(const std::vector<double>& sv, double tol) {
  return {{"singular_values", sv},
          {"numerical_rank", analysis::numerical_rank(sv, tol)},
          {"effective_rank", analysis::effective_rank(sv)}};
}

// Mean of the off-diagonal entries of an h × h matrix (0 for one head).
double off_diagonal_mean(const std::vector<double>& m, int64_t h) {
  if (h < 2) return 0;
  double s = 0;
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < h; ++j)
      if (i != j) s += m[size_t(i * h + j)];
  return s / double(h * (h - 1));
}

std::string token_label(const data::Tokenizer* tok, int64_t id) {
  if (!tok) return "";
  const std::string s = tok->decode({id});
  return s.empty() ? "\xc2\xb7" : s;  // pad, bos, eos decode to nothing: a middle dot marks them
}

}  // namespace

struct AttentionCollector::SiteSums {
  int64_t heads = 0, keys = 1;  // keys: M where the site's scores are per key component, else 1
  bool hard_max = false;        // the components' logits combine by max (nn::KeyMixture)
  std::string family;
  std::vector<double> js, cosine;  // h × h sums over counted queries
  int64_t queries = 0;
  nlohmann::json rank_examples = nlohmann::json::array();
  // mgk/smgk
  std::vector<double> resp_entropy, wins;  // (h), (h, M) sums over weighted pairs
  std::vector<double> key_distance;        // (h) sums over counted keys
  std::vector<int64_t> resp_pairs;         // (h) weighted pairs seen
  int64_t distance_keys = 0;
  std::vector<std::vector<bool>> last_query_valid;  // per example of the last batch: counted queries
};

AttentionCollector::AttentionCollector(models::Model& model, const CollectOptions& options,
                                       const data::Tokenizer* source_tokens, const data::Tokenizer* target_tokens)
    : model_(model),
      options_(options),
      source_tokens_(source_tokens),
      target_tokens_(target_tokens),
      sites_(attention_sites(model)) {
  for (const AttentionSite& s : sites_) {
    s.attn->return_weights = true;
    SiteSums sums;
    sums.heads = s.heads;
    sums.family = s.attn->config.type;
    if (const std::optional<nn::KeyMixture> mix = s.attn->key_mixture(); mix && mix->component_scores) {
      sums.keys = mix->keys;
      sums.hard_max = mix->hard_max;
    }
    sums.js.assign(size_t(s.heads * s.heads), 0.0);
    sums.cosine.assign(size_t(s.heads * s.heads), 0.0);
    sums.resp_entropy.assign(size_t(s.heads), 0.0);
    sums.wins.assign(size_t(s.heads * sums.keys), 0.0);
    sums.key_distance.assign(size_t(s.heads), 0.0);
    sums.resp_pairs.assign(size_t(s.heads), 0);
    sums_.push_back(std::move(sums));
  }
}

AttentionCollector::~AttentionCollector() {
  for (const AttentionSite& s : sites_) {
    s.attn->return_weights = false;
    s.attn->clear_record();
  }
}

void AttentionCollector::add(const data::Batch& batch) {
  NoGradGuard no_grad;
  nn::EvalModeGuard eval_mode(model_);
  model_.predict(model_batch(batch));  // the forward pass, which records every site's weights

  auto ids_of = [](const Tensor& t) {
    return t.defined() ? (t.device().is_cpu() ? t : to(t, Device::cpu())).to_vector<int64_t>() : std::vector<int64_t>();
  };
  const std::vector<int64_t> src = ids_of(batch.tokens), tgt = ids_of(batch.decoder_input);
  const int64_t B = batch.size();
  // How many of this batch's first examples still give maps / spectra.
  const int64_t map_n = std::clamp<int64_t>(options_.map_examples - maps_done_, 0, B);
  const int64_t rank_n = std::clamp<int64_t>(options_.rank_examples - rank_done_, 0, B);

  for (size_t si = 0; si < sites_.size(); ++si) {
    const AttentionSite& site = sites_[si];
    SiteSums& sums = sums_[si];
    const nn::AttentionRecord& rec = site.attn->record();
    KS_CHECK(rec.weights.defined() && rec.heads.defined(), "analyze: attention site ", site.name,
             " did not record its weights in this forward pass (is it used by the model?)");
    const int64_t h = site.heads, T = rec.weights.size(2), S = rec.weights.size(3);
    const int64_t E = rec.heads.size(3), M = sums.keys;
    const std::vector<double> W = host_values(contiguous(rec.weights));  // (B, h, T, S)
    const std::vector<double> Hd = host_values(contiguous(rec.heads));   // (B, h, T, E)
    auto w = [&](int64_t b, int64_t head, int64_t i, int64_t j) { return W[size_t(((b * h + head) * T + i) * S + j)]; };

    // Counted queries, per example (see the header).
    const bool self = site.kind == "self" && T == S;
    std::vector<std::vector<bool>> valid(size_t(B), std::vector<bool>(size_t(T), false));
    const SiteSums* layer_self = nullptr;
    if (!self && si > 0) {
      const std::string layer = site.name.substr(0, site.name.rfind('.'));
      for (size_t o = si; o-- > 0;)
        if (sites_[o].kind == "self" && sites_[o].name.substr(0, sites_[o].name.rfind('.')) == layer)
          layer_self = &sums_[o];
    }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < T; ++i) {
        double row = 0, diag = 0;
        for (int64_t head = 0; head < h; ++head) {
          for (int64_t j = 0; j < S; ++j) row += w(b, head, i, j);
          if (self) diag = std::max(diag, w(b, head, i, i));
        }
        bool ok = row > 0;
        if (self) ok = ok && diag > 0;
        if (layer_self && size_t(b) < layer_self->last_query_valid.size() &&
            size_t(i) < layer_self->last_query_valid[size_t(b)].size())
          ok = ok && layer_self->last_query_valid[size_t(b)][size_t(i)];
        valid[size_t(b)][size_t(i)] = ok;
      }
    // Counted keys: self sites the counted queries; else keys some counted
    // query weighs. Found once per example, for the examples that use them
    // (maps and spectra of the first ones; every one for MGK's key distances).
    // (Per-component scores and keys: mgk/smgk, nn::KeyMixture::component_scores.)
    const bool key_stats = M > 1;
    std::vector<std::vector<bool>> key_valid(size_t(key_stats ? B : std::max(map_n, rank_n)));
    for (size_t b = 0; b < key_valid.size(); ++b) {
      std::vector<bool>& k = key_valid[b];
      k.assign(size_t(S), false);
      for (int64_t j = 0; j < S; ++j) {
        if (self) {
          k[size_t(j)] = valid[b][size_t(j)];
          continue;
        }
        for (int64_t i = 0; i < T && !k[size_t(j)]; ++i)
          if (valid[b][size_t(i)])
            for (int64_t head = 0; head < h; ++head) k[size_t(j)] = k[size_t(j)] || w(int64_t(b), head, i, j) > 0;
      }
    }
    auto indices = [](const std::vector<bool>& counted) {  // the positions counted, in order
      std::vector<int64_t> out;
      for (size_t i = 0; i < counted.size(); ++i)
        if (counted[i]) out.push_back(int64_t(i));
      return out;
    };

    // Redundancy: JS between attention rows, cosine between head outputs.
    std::vector<double> mix(static_cast<size_t>(S)), ent(static_cast<size_t>(h));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < T; ++i) {
        if (!valid[size_t(b)][size_t(i)]) continue;
        ++sums.queries;
        for (int64_t a = 0; a < h; ++a) ent[size_t(a)] = analysis::entropy(&W[size_t(((b * h + a) * T + i) * S)], S);
        for (int64_t a = 0; a < h; ++a)
          for (int64_t c = a + 1; c < h; ++c) {
            const double* pa = &W[size_t(((b * h + a) * T + i) * S)];
            const double* pc = &W[size_t(((b * h + c) * T + i) * S)];
            for (int64_t j = 0; j < S; ++j) mix[size_t(j)] = 0.5 * (pa[j] + pc[j]);
            // JS = H(M) − (H(P) + H(Q))/2, the definition of analysis::js_divergence
            // with each row's entropy computed once instead of once per pair
            const double js = std::max(0.0, analysis::entropy(mix.data(), S) - 0.5 * (ent[size_t(a)] + ent[size_t(c)]));
            const double cs = analysis::cosine_similarity(&Hd[size_t(((b * h + a) * T + i) * E)],
                                                          &Hd[size_t(((b * h + c) * T + i) * E)], E);
            sums.js[size_t(a * h + c)] += js;
            sums.js[size_t(c * h + a)] += js;
            sums.cosine[size_t(a * h + c)] += cs;
            sums.cosine[size_t(c * h + a)] += cs;
          }
        for (int64_t a = 0; a < h; ++a) sums.cosine[size_t(a * h + a)] += 1;
      }

    // Position labels: rows are the site's queries, columns its keys.
    auto labels = [&](int64_t b, bool rows) {
      std::vector<std::string> out;
      // A batch with a decoder input (seq2seq) labels its decoder's queries, and the keys of its
      // self-attention, with target tokens.
      const bool decoder_side = !tgt.empty() && site.name.rfind("decoder", 0) == 0 && (rows || site.kind == "self");
      const std::vector<int64_t>& ids = decoder_side ? tgt : src;
      const data::Tokenizer* tok = decoder_side ? target_tokens_ : source_tokens_;
      if (!tok || ids.empty()) return out;
      const int64_t len = int64_t(ids.size()) / B, n = rows ? T : S;
      const int64_t lead = n - len;  // an encoder classifier's [cls] position comes first
      if (lead != 0 && lead != 1) return out;
      if (lead == 1) out.push_back("[cls]");
      for (int64_t p = 0; p < len; ++p) out.push_back(token_label(tok, ids[size_t(b * len + p)]));
      return out;
    };

    // Maps of the first examples.
    for (int64_t b = 0; b < map_n; ++b) {
      const std::vector<std::string> rl = labels(b, true), cl = labels(b, false);
      AttentionMap map;
      map.example = batch.index[size_t(b)];
      map.site = site.name;
      map.heads = h;
      const std::vector<int64_t> rows = indices(valid[size_t(b)]), cols = indices(key_valid[size_t(b)]);
      map.rows = int64_t(rows.size());
      map.cols = int64_t(cols.size());
      for (int64_t head = 0; head < h; ++head)
        for (int64_t i : rows)
          for (int64_t j : cols) map.weights.push_back(float(w(b, head, i, j)));
      if (!rl.empty())
        for (int64_t i : rows) map.row_tokens.push_back(rl[size_t(i)]);
      if (!cl.empty())
        for (int64_t j : cols) map.col_tokens.push_back(cl[size_t(j)]);
      maps_.push_back(std::move(map));
    }

    // Spectra of the first examples' score and attention matrices.
    std::vector<double> Sc;
    if (rank_n > 0 && rec.scores.defined()) Sc = host_values(contiguous(rec.scores));
    for (int64_t b = 0; b < rank_n; ++b) {
      const std::vector<int64_t> rows = indices(valid[size_t(b)]), cols = indices(key_valid[size_t(b)]);
      const int64_t R = int64_t(rows.size()), C = int64_t(cols.size());
      nlohmann::json heads_json = nlohmann::json::array();
      std::vector<double> mat(size_t(R * C));
      for (int64_t head = 0; head < h; ++head) {
        nlohmann::json hj;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) mat[size_t(r * C + c)] = w(b, head, rows[size_t(r)], cols[size_t(c)]);
        hj["attention"] = spectrum_json(analysis::singular_values(mat.data(), R, C), options_.rank_tolerance);
        if (!Sc.empty()) {
          // (B, h, T, S), or mgk's (B, h, M, T, S) component logits
          auto sc = [&](int64_t comp, int64_t i, int64_t j) {
            return Sc[size_t((((b * h + head) * M + comp) * T + i) * S + j)];
          };
          if (M == 1) {
            for (int64_t r = 0; r < R; ++r)
              for (int64_t c = 0; c < C; ++c) mat[size_t(r * C + c)] = sc(0, rows[size_t(r)], cols[size_t(c)]);
            hj["scores"] = spectrum_json(analysis::singular_values(mat.data(), R, C), options_.rank_tolerance);
          } else {
            nlohmann::json comps = nlohmann::json::array();
            for (int64_t comp = 0; comp < M; ++comp) {
              for (int64_t r = 0; r < R; ++r)
                for (int64_t c = 0; c < C; ++c) mat[size_t(r * C + c)] = sc(comp, rows[size_t(r)], cols[size_t(c)]);
              comps.push_back(spectrum_json(analysis::singular_values(mat.data(), R, C), options_.rank_tolerance));
            }
            hj["components"] = comps;
            // The mixture logit whose softmax over keys is the attention:
            // log Σ_r exp(logit_r), or max_r under hard E.
            const bool hard = sums.hard_max;
            for (int64_t r = 0; r < R; ++r)
              for (int64_t c = 0; c < C; ++c) {
                double mx = -std::numeric_limits<double>::infinity(), acc = 0;
                for (int64_t comp = 0; comp < M; ++comp) mx = std::max(mx, sc(comp, rows[size_t(r)], cols[size_t(c)]));
                for (int64_t comp = 0; comp < M; ++comp)
                  acc += std::exp(sc(comp, rows[size_t(r)], cols[size_t(c)]) - mx);
                mat[size_t(r * C + c)] = hard ? mx : mx + std::log(acc);
              }
            hj["mixture"] = spectrum_json(analysis::singular_values(mat.data(), R, C), options_.rank_tolerance);
          }
        }
        heads_json.push_back(std::move(hj));
      }
      sums.rank_examples.push_back(
          {{"example", batch.index[size_t(b)]}, {"rows", R}, {"cols", C}, {"heads", std::move(heads_json)}});
    }

    // MGK/sMGK: responsibilities at weighted pairs, distances between a position's keys.
    if (key_stats) {
      KS_CHECK(rec.keys.defined(), "analyze: attention site ", site.name,
               " has per-component scores but did not record its keys (nn::AttentionRecord::keys)");
      if (Sc.empty()) Sc = host_values(contiguous(rec.scores));
      const std::vector<double> K = host_values(contiguous(rec.keys));  // (B, h, M, S, p)
      const int64_t P = rec.keys.size(4);
      std::vector<double> g(static_cast<size_t>(M));
      for (int64_t b = 0; b < B; ++b) {
        const std::vector<bool>& kv = key_valid[size_t(b)];
        for (int64_t head = 0; head < h; ++head) {
          for (int64_t i = 0; i < T; ++i) {
            if (!valid[size_t(b)][size_t(i)]) continue;
            for (int64_t j = 0; j < S; ++j) {
              if (w(b, head, i, j) <= 0) continue;
              double mx = -std::numeric_limits<double>::infinity(), z = 0;
              int64_t best = 0;
              for (int64_t r = 0; r < M; ++r) {
                g[size_t(r)] = Sc[size_t((((b * h + head) * M + r) * T + i) * S + j)];
                if (g[size_t(r)] > mx) mx = g[size_t(r)], best = r;
              }
              for (int64_t r = 0; r < M; ++r) z += (g[size_t(r)] = std::exp(g[size_t(r)] - mx));
              for (int64_t r = 0; r < M; ++r) g[size_t(r)] /= z;
              sums.resp_entropy[size_t(head)] += analysis::entropy(g.data(), M);
              sums.wins[size_t(head * M + best)] += 1;
              ++sums.resp_pairs[size_t(head)];
            }
          }
          for (int64_t j = 0; j < S; ++j) {
            if (!kv[size_t(j)]) continue;
            double dist = 0;
            int64_t pairs = 0;
            for (int64_t r = 0; r < M; ++r)
              for (int64_t r2 = r + 1; r2 < M; ++r2, ++pairs) {
                double d2 = 0;
                for (int64_t c = 0; c < P; ++c) {
                  const double x = K[size_t((((b * h + head) * M + r) * S + j) * P + c)] -
                                   K[size_t((((b * h + head) * M + r2) * S + j) * P + c)];
                  d2 += x * x;
                }
                dist += std::sqrt(d2);
              }
            sums.key_distance[size_t(head)] += dist / double(pairs);
            if (head == 0) ++sums.distance_keys;
          }
        }
      }
    }
    sums.last_query_valid = std::move(valid);
  }
  maps_done_ += map_n;
  rank_done_ += rank_n;
}

nlohmann::json AttentionCollector::site_summaries() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t si = 0; si < sites_.size(); ++si) {
    const AttentionSite& site = sites_[si];
    const SiteSums& s = sums_[si];
    const int64_t h = s.heads;
    std::vector<double> js(s.js), cosine(s.cosine);
    const double n = double(std::max<int64_t>(1, s.queries));
    for (double& x : js) x /= n;
    for (double& x : cosine) x /= n;
    auto matrix = [h](const std::vector<double>& m) {
      nlohmann::json rows = nlohmann::json::array();
      for (int64_t i = 0; i < h; ++i) rows.push_back(std::vector<double>(m.begin() + i * h, m.begin() + (i + 1) * h));
      return rows;
    };
    nlohmann::json j = {{"name", site.name},
                        {"kind", site.kind},
                        {"family", s.family},
                        {"heads", h},
                        {"head_dim", site.attn->config.resolved_head_dim()},
                        {"queries", s.queries},
                        {"js", matrix(js)},
                        {"js_mean_off_diagonal", off_diagonal_mean(js, h)},
                        {"cosine", matrix(cosine)},
                        {"cosine_mean_off_diagonal", off_diagonal_mean(cosine, h)},
                        {"rank", {{"tolerance", options_.rank_tolerance}, {"examples", s.rank_examples}}}};
    NoGradGuard no_grad;
    if (const std::optional<nn::KeyMixture> mix = site.attn->key_mixture()) {
      // Responsibilities and key distances where the scores are per component (mgk, smgk).
      const bool components = mix->component_scores;
      const int64_t M = mix->keys;
      const std::vector<double> pi = host_values(mix->pi);  // (h, M)
      nlohmann::json mj = {{"pi", nlohmann::json::array()}};
      for (int64_t i = 0; i < h; ++i)
        mj["pi"].push_back(std::vector<double>(pi.begin() + i * M, pi.begin() + (i + 1) * M));
      if (components) {
        std::vector<double> ent(static_cast<size_t>(h));
        nlohmann::json wins = nlohmann::json::array();
        for (int64_t i = 0; i < h; ++i) {
          const double pairs = double(std::max<int64_t>(1, s.resp_pairs[size_t(i)]));
          ent[size_t(i)] = s.resp_entropy[size_t(i)] / pairs;
          std::vector<double> share(static_cast<size_t>(M));
          for (int64_t r = 0; r < M; ++r) share[size_t(r)] = s.wins[size_t(i * M + r)] / pairs;
          wins.push_back(share);
        }
        mj["responsibility_entropy"] = ent;
        mj["component_wins"] = wins;
      }
      if (components && s.distance_keys > 0) {
        std::vector<double> dist(static_cast<size_t>(h));
        for (int64_t i = 0; i < h; ++i) dist[size_t(i)] = s.key_distance[size_t(i)] / double(s.distance_keys);
        mj["key_distance"] = dist;
      }
      j["mgk"] = std::move(mj);
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace ks::tools
