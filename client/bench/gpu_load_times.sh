#!/bin/sh
# gpu_load_times.sh BUILD [OUTDIR]: load to ready on the GPU, run from the source tree: ResNet-50 and BERT-base
# (the default max_batch_size 64; BERT max_dims 256 with padding buckets), fp32 and fp16, without the compile
# cache, then with it cold and warm (a restart); one line per start, the daemons' logs copied to OUTDIR.
# LOAD_TIMES_PRECISIONS (default "fp32 fp16") and LOAD_TIMES_ARGS (more daemon options) adjust it.
set -u
B=$(cd "${1:?usage: gpu_load_times.sh BUILD [OUTDIR]}" && pwd); OUT=${2:-.}; W=${TMPDIR:-/tmp}/inferd-load-times; rm -rf $W; mkdir -p $W
for m in resnet50 bert; do python3 tests/helpers/onnx_reference.py --out $W/exp --model $m --opset 17 --batch 1 > $W/exp_$m.txt 2>&1 || tail -3 $W/exp_$m.txt; done
for p in fp32 fp16; do
  mkdir -p $W/repo_$p/resnet50 $W/repo_$p/bert
  ln -f $W/exp/resnet50/model.onnx $W/repo_$p/resnet50/model.onnx; ln -f $W/exp/bert/model.onnx $W/repo_$p/bert/model.onnx
  echo "{\"platform\": \"onnx\", \"precision\": \"$p\"}" > $W/repo_$p/resnet50/model.json
  echo "{\"platform\": \"onnx\", \"max_dims\": {\"input_ids\": [256], \"attention_mask\": [256]}, \"precision\": \"$p\"}" > $W/repo_$p/bert/model.json
done
run() { # tag repo extra-args
  t0=$(date +%s.%N)
  "$B/inferd" --device=cuda:0 --model_repository=$2 --http_port=8011 --shm_socket=$W/sock ${LOAD_TIMES_ARGS:-} $3 > $W/d_$1.log 2>&1 &
  pid=$!
  for i in $(seq 1 1500); do curl -sf http://127.0.0.1:8011/v2/health/ready >/dev/null && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  t1=$(date +%s.%N)
  echo "$1: ready after $(python3 -c "print(round($t1 - $t0, 2))") s; $(grep -hoE "model '[a-z0-9]+' loaded .* in [0-9.]+ s|compile cache: [0-9]+ hits, [0-9]+ misses" $W/d_$1.log | sed -E 's/loaded .* in/loaded in/' | tr '\n' ';')"
  [ "$1" = "fp16_warm" ] && curl -s http://127.0.0.1:8011/metrics | grep -E "^inferd_gpu_" | head -6
  kill $pid; wait $pid 2>/dev/null
}
for p in ${LOAD_TIMES_PRECISIONS:-fp32 fp16}; do
  run ${p}_nocache $W/repo_$p ""
  run ${p}_cold $W/repo_$p "--compile_cache_dir=$W/cache_$p"
  run ${p}_warm $W/repo_$p "--compile_cache_dir=$W/cache_$p"
done
cp $W/d_*.log $OUT/ 2>/dev/null
