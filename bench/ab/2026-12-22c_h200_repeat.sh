# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-22c_h200_repeat.sh`, on the H200 that just ran
# 2026-12-22b (its /tmp/t_pack holds that run's fresh tune): the tuned pack and the recorded tune
# once more each, so that each figure has a second or third bench on the same machine.
on_h200 || return 0
[ -f /tmp/t_pack/runtime.json ] || { echo "no /tmp/t_pack: run 2026-12-22b first on this machine"; return 0; }
bench_llm ember /tmp/t_pack tuned_2 --context 128 1024 2048
bench_llm ember /tmp/h_pack main_3 --context 128 1024 2048
