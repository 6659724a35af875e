#!/bin/bash
# tools/experiments/lra_speed.sh — training step time of MGK-1 against softmax-2 at the
# widths of the LRA models (d 64, d_ff 128, 2 layers, head size 32, vocabulary 256) for
# n = 1K, 2K, 4K at 16K tokens a step, float32 and bf16, three runs each (the median is
# docs/results/cost.md's figure). keystone bench times a causal decoder LM: the LRA models
# are bidirectional encoders, whose attention does twice the work of the causal one.
# Not here: inference (forward-only) time, which keystone bench does not measure.
#   bash tools/experiments/lra_speed.sh [build/keystone]
ks=${1:-build/keystone}
for prec in float32 bf16; do
for n in 1024 2048 4096; do
  b=$(( 16384 / n ))
  for fam in "softmax 2" "mgk 1"; do
    set -- $fam
    ms=()
    for r in 1 2 3; do
      ms+=($($ks bench --attention $1 --heads $2 --head-dim 32 --d-model 64 --layers 2 --d-ff 128 --seq $n --batch $b --vocab 256 --steps 5 --precision $prec | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])'))
    done
    med=$(printf '%s\n' "${ms[@]}" | sort -g | sed -n 2p)
    echo "$prec $n $b $1-$2 ${ms[*]} median=$med"
  done
done
done
