// nn/data_parallel.cpp — buckets, hooks and the gradient all-reduce.
#include "nn/data_parallel.h"

#include "autograd/grad_mode.h"
#include "core/clock.h"
#include "core/copy.h"
#include "ops/optim.h"
#include "ops/view.h"

namespace ks::nn {

namespace {

// Every tensor of `tensors` <- root's, in place (a collective).
void broadcast_all(const NamedTensors& tensors, dist::ProcessGroup& group, int root, const char* what) {
  if (group.size() == 1) return;
  NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) {
    KS_CHECK(t.is_contiguous(), "data parallel: ", what, " ", name, " is not contiguous");
    group.broadcast(t, root);
    t.bump_version();
  }
}

}  // namespace

void broadcast_module(Module& module, dist::ProcessGroup& group, int root) {
  broadcast_all(module.named_parameters(), group, root, "parameter");
  broadcast_all(module.named_buffers(), group, root, "buffer");
}

DistributedDataParallel::DistributedDataParallel(Module& module, dist::ProcessGroup& group, DataParallelOptions options)
    : module_(module), group_(group), options_(options) {
  KS_CHECK(options_.bucket_mb > 0, "DistributedDataParallel: bucket_mb must be > 0, got ", options_.bucket_mb);
  // Frozen parameters (nn/lora.h) get no gradient: no bucket waits for one.
  for (const Tensor& p : module_.parameters())
    if (p.requires_grad()) params_.push_back(p);
  KS_CHECK(!params_.empty(), "DistributedDataParallel: the module has no trainable parameters");
  if (options_.broadcast_parameters) broadcast_module(module_, group_, 0);

  // Buckets in reverse registration order, each of one dtype and device.
  const double cap = options_.bucket_mb * 1024 * 1024;
  bucket_of_.resize(params_.size());
  param_ready_.assign(params_.size(), false);
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k];
    const double bytes = double(p.numel()) * double(itemsize(p.dtype()));
    bool fresh = buckets_.empty();
    if (!fresh) {
      const Bucket& last = buckets_.back();
      const Tensor& first = params_[last.params.front()];
      const double used =
          double(last.offsets.back() + params_[last.params.back()].numel()) * double(itemsize(first.dtype()));
      fresh = first.dtype() != p.dtype() || first.device() != p.device() || used + bytes > cap;
    }
    if (fresh) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    const int64_t at = b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].numel();
    b.params.push_back(k);
    b.offsets.push_back(at);
    bucket_of_[k] = buckets_.size() - 1;
  }
  for (Bucket& b : buckets_) {
    const Tensor& first = params_[b.params.front()];
    const int64_t n = b.offsets.back() + params_[b.params.back()].numel();
    b.buffer = Tensor::empty({n}, first.dtype(), first.device());
    stats_.bytes_per_step += n * int64_t(itemsize(first.dtype()));
  }
  stats_.buckets = int64_t(buckets_.size());

  if (group_.size() > 1)
    for (size_t k = 0; k < params_.size(); ++k)
      hooks_.push_back(
          register_post_accumulate_grad_hook(params_[k], [this, k](const Tensor&) { on_gradient_ready(k); }));
}

DistributedDataParallel::~DistributedDataParallel() {
  for (HookHandle& h : hooks_) h.remove();
}

void DistributedDataParallel::set_sync(bool on) { sync_ = on; }

void DistributedDataParallel::broadcast_buffers() { broadcast_all(module_.named_buffers(), group_, 0, "buffer"); }

void DistributedDataParallel::on_gradient_ready(size_t k) {
  if (!sync_) return;
  KS_CHECK(!param_ready_[k], "DistributedDataParallel: a second backward reached parameter ", k,
           " before finish_gradient_sync() (call it after every backward with sync on, or set_sync(false) "
           "for the micro-batches before the last)");
  param_ready_[k] = true;
  Bucket& b = buckets_[bucket_of_[k]];
  if (++b.ready == b.params.size()) launch_ready_buckets();
  progress();
}

void DistributedDataParallel::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].ready == buckets_[next_launch_].params.size()) {
    launch(buckets_[next_launch_++]);
    ++stats_.launched_in_backward;
  }
}

void DistributedDataParallel::launch(Bucket& b) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const Tensor& p = params_[b.params[i]];
    Tensor slot = flat_window(b.buffer, b.offsets[i], p);
    const Tensor g = p.grad();
    if (g.defined())
      copy_(slot, g);
    else
      fill_(slot, 0);  // no gradient on this rank this step: it adds nothing
  }
  b.work = group_.all_reduce_async(b.buffer, dist::ReduceOp::Sum);
}

void DistributedDataParallel::progress() {
  for (size_t i = 0; i < next_launch_; ++i)
    if (buckets_[i].work) buckets_[i].work->test();
}

void DistributedDataParallel::finish_gradient_sync() {
  if (group_.size() == 1 || !sync_) return;
  NoGradGuard no_grad;
  while (next_launch_ < buckets_.size()) {
    launch(buckets_[next_launch_++]);
    ++stats_.launched_at_finish;
  }
  const double start = now_s();
  const double mean = 1.0 / double(group_.size());
  for (Bucket& b : buckets_) {
    b.work->wait();
    b.work.reset();
    scale_(b.buffer, mean);
    for (size_t i = 0; i < b.params.size(); ++i) {
      const Tensor& p = params_[b.params[i]];
      Tensor slot = flat_window(b.buffer, b.offsets[i], p);
      Tensor g = p.grad();
      if (!g.defined()) {
        g = Tensor::empty(p.sizes(), p.dtype(), p.device());
        p.set_grad(g);
      }
      copy_(g, slot);
      g.bump_version();
    }
    b.ready = 0;
  }
  stats_.wait_s += now_s() - start;
  ++stats_.syncs;
  next_launch_ = 0;
  param_ready_.assign(params_.size(), false);
}

}  // namespace ks::nn
