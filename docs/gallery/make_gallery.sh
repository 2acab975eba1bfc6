#!/usr/bin/env bash
# Remake every picture of the gallery (docs/gallery.md), from the repository root; the one
# command that writes into docs/gallery/:
#   bash docs/gallery/make_gallery.sh
# Needs the package installed (`pip install -e .`) and Graphviz's `dot`. Every picture is
# made for a 16:9 slide (--size 16:9; PNGs at 144 dpi are 1920 pixels wide). Measured on a
# 2-core AMD EPYC shared by about eight programs (load 8-10): `train --preset tiny` 161 s
# (evaluating every 250 steps; here every 25), gradflow --steps 300 about 12 min, the
# translation model's training 840 s; the rest, seconds each.
set -euo pipefail
cd "$(dirname "$0")/../.."
g=docs/gallery
run_dir="${RUN_DIR:-out/gallery-tiny}"
translate_dir="${TRANSLATE_DIR:-out/gallery-translate}"

microtensor graph --preset baby --depth 1 --size 16:9 --output "$g/gpt_depth1.svg"
microtensor graph --preset baby --focus blocks.0.attn --size 16:9 --output "$g/attention_graph.svg"
microtensor graph --preset baby --focus blocks.0.attn --size 16:9 --overlay flops \
  --output "$g/attention_flops.svg"
microtensor graph --preset tiny --focus blocks.0 --depth 1 --size 16:9 --direction backward \
  --output "$g/residual_block.svg"
microtensor graph --preset baby --focus blocks.0.attn --size 16:9 --animate "$g/backprop_attention.gif"
microtensor gradflow --n-layer 12 --steps 300 --size 16:9 --output "$g/gradflow.png"
microtensor train --preset tiny --eval-interval 25 --out "$run_dir" --quiet --overwrite --log-grad-norms
microtensor plot-loss --metrics "$run_dir/metrics.jsonl" --size 16:9 --output "$g/loss_curve.png"
microtensor attention --out "$run_dir" --prompt "def __init__(self):" --layer 1 --size 16:9 \
  --output "$g/attention_heatmap.png"
microtensor translate graph --depth 1 --size 16:9 --output "$g/seq2seq_depth1.svg"
microtensor translate graph --focus decoder.0.multihead_attn --size 16:9 \
  --output "$g/seq2seq_cross_attention_graph.svg"
microtensor translate train --out "$translate_dir" --quiet --overwrite
microtensor translate run --out "$translate_dir" "the twenty-third of september, 1987" \
  --size 16:9 --attention "$g/seq2seq_cross_attention.png"
