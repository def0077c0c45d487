#!/usr/bin/env bash
# Regenerate every sample session: real recordings of lanemon against its two simulated lanes, at real time.
# Usage: sample_sessions/make.sh [lanemon]     (about 20 minutes on 2 cores; two runs go side by side)
# Each line below is the exact command that made the file next to it; see README.md here.
set -euo pipefail
cd "$(dirname "$0")"
L=${1:-lanemon}
rm -f ./*.jsonl ./qeval-*.json

# 1. a live demo session: the dashboard for about 40 s, then q (driven through tmux)
tmux kill-session -t lanemon-sample 2>/dev/null || true
tmux new-session -d -s lanemon-sample -x 140 -y 40 "$L demo --record demo.jsonl"
sleep 40
tmux send-keys -t lanemon-sample q
sleep 3
tmux kill-session -t lanemon-sample 2>/dev/null || true

(
  # 2. decode ladder C1-C6 with per-category C1 decode (the long one), then the gauntlet and races
  $L bench decode --demo --headless --record decode.jsonl > /dev/null
  $L gauntlet --demo --reps 3 --headless --record gauntlet.jsonl > /dev/null
  $L race --demo --category coding --repeat 2 --headless --record races.jsonl > /dev/null
) &
first=$!
(
  # 3. prefill ladder and needles
  $L bench prefill --demo --headless --record prefill.jsonl > /dev/null
  $L bench needles --demo --headless --record needles.jsonl > /dev/null
  # 4. quality gate on both lanes, greedy agreement, logprob divergence (not exposed: exit 3)
  $L qeval run A --demo --headless --record qeval-A.jsonl -o qeval-A.json > /dev/null
  $L qeval run B --demo --headless --record qeval-B.jsonl -o qeval-B.json > /dev/null
  $L agree --demo --headless --record agree.jsonl > /dev/null
  $L kl --reference B --demo --headless --record kl.jsonl > /dev/null || [ $? -eq 3 ]
  # 5. "yesterday vs today": the same short ladder; today lane B runs 30% slower (--time-scale 1.3)
  for day in yesterday today; do
    scale_b=1.0; [ "$day" = today ] && scale_b=1.3
    $L sim --profile tensorfold-exl3 --port 18601 > /dev/null 2>&1 & a=$!
    $L sim --profile sglang-native --port 18602 --time-scale "$scale_b" > /dev/null 2>&1 & b=$!
    sleep 3
    $L bench decode --lane A=http://127.0.0.1:18601/v1 --lane B=http://127.0.0.1:18602/v1 --levels 1,2,4 --reps 2 \
      --no-categories --headless --record "$day.jsonl" > /dev/null
    kill $a $b; wait $a $b 2>/dev/null || true
  done
) &
second=$!
wait $first $second
ls -la ./*.jsonl
