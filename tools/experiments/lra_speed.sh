#!/bin/bash
# tools/experiments/lra_speed.sh — MGK-1 against softmax-2 at the widths of the LRA models
# (d 64, d_ff 128, 2 layers, head size 32, vocabulary 256) for n = 1K, 2K, 4K at 16K tokens
# a step, float32 and bf16, three runs each, the two families in turn (A B A B ...) so a
# machine whose load drifts slows both alike; prints each run's step time and the median
# (docs/results/cost.md's figures). Four things are timed (keystone bench's modes):
#   model-train        a training step of bench's causal decoder LM (forward, backward, AdamW)
#   model-forward      its inference: the forward pass alone, no graph
#   attention-train    one bidirectional attention sublayer (projections + attention), forward
#                      and backward: the LRA encoders' attention, undiluted by the rest
#   attention-forward  the same, forward only
# The LRA models are bidirectional encoders, whose attention does twice the causal work.
#   bash tools/experiments/lra_speed.sh [build/keystone] [modes...]
ks=${1:-build/keystone}
shift
modes=${*:-model-train model-forward attention-train attention-forward}
flags_of() {
  case $1 in
    model-train) echo "" ;;
    model-forward) echo "--forward-only" ;;
    attention-train) echo "--attention-only --bidirectional" ;;
    attention-forward) echo "--attention-only --bidirectional --forward-only" ;;
    *) echo "lra_speed.sh: unknown mode '$1'" >&2; exit 2 ;;
  esac
}
step_ms() { python3 -c 'import json,sys; print(round(json.load(sys.stdin)["step_ms"], 2))'; }
for mode in $modes; do
  flags=$(flags_of "$mode") || exit 2
  for prec in float32 bf16; do
    for n in 1024 2048 4096; do
      b=$(( 16384 / n ))
      soft=() mgk=()
      for r in 1 2 3; do
        common="--head-dim 32 --d-model 64 --layers 2 --d-ff 128 --seq $n --batch $b --vocab 256 --steps 5 --precision $prec $flags"
        soft+=($($ks bench --attention softmax --heads 2 $common | step_ms)) || exit 1
        mgk+=($($ks bench --attention mgk --heads 1 $common | step_ms)) || exit 1
      done
      ms=$(printf '%s\n' "${soft[@]}" | sort -g | sed -n 2p)
      mm=$(printf '%s\n' "${mgk[@]}" | sort -g | sed -n 2p)
      echo "$mode $prec n=$n batch=$b softmax-2: ${soft[*]} median=$ms | mgk-1: ${mgk[*]} median=$mm |" \
           "ratio=$(python3 -c "print(round($mm / $ms, 3))")"
    done
  done
done
