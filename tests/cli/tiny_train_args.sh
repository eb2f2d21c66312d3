# Sourced by the trainer's bash test scripts after check_lib.sh (which stays
# POSIX sh: tests/one_thread_check.sh sources it too). A model that trains in
# seconds, and (tiny_train_args DIR) the array `args`: it on trainer_corpus's
# files in DIR.
tiny_model=(--config tiny --encoder-layers 1 --decoder-layers 1 --d-model 32 --d-ff 64 --vocab-size 200)
tiny_train_args() {
  args=(--train-src "$1/train.en" --train-tgt "$1/train.de" --dev-src "$1/dev.en" --dev-ref "$1/dev.de"
        "${tiny_model[@]}" --max-tokens 400 --warmup 10 --lr 3e-3 --log-every 5)
}
