#!/usr/bin/env bash
# The command-line grammar every tool shares (tools/cli_args.hpp), one check
# per rule and tool, then mt_translate's streaming and what it writes.
# Usage: test_grammar.sh BIN_DIR SCRATCH_DIR SOURCE_DIR
set -u
bin=$1
dir=$2
src=$3
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
model=$src/models/en-de-tiny.int8.mtm
run() {  # run TOOL ARGS...: exit code in $rc, stdout in out.txt, stderr in err.txt
  "$bin/$1" "${@:2}" < /dev/null > "$dir/out.txt" 2> "$dir/err.txt"
  rc=$?
}
says() { grep -q -- "$1" "$dir/err.txt"; }
usage_error() {  # usage_error NAME WORDS TOOL ARGS...: exit 2, one line saying WORDS
  local name=$1 words=$2; shift 2
  run "$@"
  check "$name: exit 2 (got $rc)" test $rc -eq 2
  check "$name: says '$words'" says "$words"
  check "$name: one line" test "$(lines "$dir/err.txt")" -eq 1
}

# --- every tool: --help, --version, unknown, near-miss, repeated, switch=value, missing value, "--"
tools=(mt_translate mt_model mt_vocab mt_bleu mt_quantize mt_train mt_shortlist)
# A switch of each tool and an option that takes a value.
declare -A switch=([mt_translate]=--scores [mt_model]=--pre-norm [mt_vocab]=--byte-fallback [mt_bleu]=--lowercase
                   [mt_quantize]=--fp32-embeddings [mt_train]=--resume [mt_shortlist]=--force)
declare -A valued=([mt_translate]=--beam [mt_model]=--seed [mt_vocab]=--vocab-size [mt_bleu]=--tokenize
                   [mt_quantize]=--threads [mt_train]=--threads [mt_shortlist]=--frequent)
for tool in "${tools[@]}"; do
  if [ ! -x "$bin/$tool" ]; then
    echo "skip $tool: not built"
    continue
  fi
  run "$tool" --help
  check "$tool --help: exit 0" test $rc -eq 0
  check "$tool --help: usage and every option, -h and --version too" \
    grep -q "^usage:" "$dir/out.txt" -a -n "$(grep -- "-h, --help" "$dir/out.txt")" -a -n "$(grep -- "--version" "$dir/out.txt")"
  run "$tool" -h
  check "$tool -h: exit 0" test $rc -eq 0
  run "$tool" --version
  check "$tool --version: exit 0" test $rc -eq 0
  check "$tool --version: names the tool and libmt's version" grep -q "^$tool (libmt [0-9.]*)" "$dir/out.txt"
  check "$tool --version: model formats, kernels, CUDA" \
    test -n "$(grep "format versions 1 to" "$dir/out.txt")" -a -n "$(grep "^kernels: " "$dir/out.txt")" \
      -a -n "$(grep "^CUDA: " "$dir/out.txt")"
  usage_error "$tool unknown option" "unknown option --bogus" "$tool" --bogus
  usage_error "$tool near miss" "did you mean ${valued[$tool]}?" "$tool" "${valued[$tool]}x" 1
  usage_error "$tool repeated option" "option ${valued[$tool]} is given more than once" "$tool" \
    "${valued[$tool]}" 1 "${valued[$tool]}" 2
  usage_error "$tool switch with a value" "option ${switch[$tool]} is a switch and takes no value" "$tool" \
    "${switch[$tool]}=no"
  usage_error "$tool value missing at the end" "option ${valued[$tool]} needs a value" "$tool" "${valued[$tool]}"
  run "$tool" --help --bogus
  check "$tool --help wins over other errors" test $rc -eq 0
done

# Other tools' spellings: refused, the right name suggested.
usage_error "Marian's --beam-size" "did you mean --beam?" mt_translate -m "$model" --beam-size 4
usage_error "Marian's -b" "did you mean --beam?" mt_translate -m "$model" -b 4
usage_error "Marian's --n-best" "did you mean --nbest?" mt_translate -m "$model" --n-best
usage_error "Marian's --cpu-threads" "did you mean --threads?" mt_translate -m "$model" --cpu-threads 2
usage_error "sacreBLEU's -tok" "did you mean --tokenize?" mt_bleu ref.txt -tok zh
usage_error "sacreBLEU's -lc" "did you mean --lowercase?" mt_bleu ref.txt -lc
usage_error "sacreBLEU's -m" "did you mean --metrics?" mt_bleu ref.txt -m bleu
usage_error "mt_vocab's old --size" "did you mean --vocab-size?" mt_vocab train --size 100
if [ -x "$bin/mt_train" ]; then
  usage_error "mt_train's old --dev-tgt" "did you mean --dev-ref?" mt_train --dev-tgt x
  usage_error "mt_train --max-length (translation's name)" "did you mean --max-train-length?" mt_train --max-length 50
fi

# --opt=value is --opt value, for long and short forms.
input=$src/tests/data/shipped_sentences.en
head -5 "$input" > "$dir/five.en"
"$bin/mt_translate" -m "$model" --beam 2 -i "$dir/five.en" > "$dir/a.txt"
"$bin/mt_translate" -m="$model" --beam=2 -i="$dir/five.en" > "$dir/b.txt"
check "--opt=value and -o=value equal --opt value" cmp -s "$dir/a.txt" "$dir/b.txt"
"$bin/mt_translate" --model "$model" --beam 2 --input - -o - < "$dir/five.en" > "$dir/c.txt"
check "-i - and -o - are the standard streams" cmp -s "$dir/a.txt" "$dir/c.txt"
"$bin/mt_translate" -m "$model" --beam 2 -i "$dir/five.en" -o "$dir/d.txt" > "$dir/stdout.txt"
check "-o FILE writes the file" cmp -s "$dir/a.txt" "$dir/d.txt"
check "-o FILE leaves standard output empty" test ! -s "$dir/stdout.txt"
usage_error "a positional argument mt_translate does not take" "unexpected argument 'extra'" mt_translate -m "$model" extra
run mt_translate -m "$model" -i "$dir/five.en" -- -o
check "after --, everything is an argument" says "unexpected argument '-o'"

# Files: the path and the cause, never an abort.
usage_error "GPU-only option on a CPU run" "--fp16 applies to --device cuda only" mt_translate -m "$model" --fp16
run mt_translate -m "$model" -i "$dir"
check "a directory as input: exit 1" test $rc -eq 1
check "a directory as input: says so" says "cannot read '$dir': it is a directory"
run mt_translate -m "$model" -i "$dir/none.txt"
check "a missing input: the cause" says "cannot read '$dir/none.txt': No such file or directory"
"$bin/mt_translate" -m "$model" < "$dir" > /dev/null 2> "$dir/err.txt"
check "standard input a directory: exit 1" test $? -eq 1
check "standard input a directory: says so" says "standard input: it is a directory"
"$bin/mt_translate" -m "$model" <&- > /dev/null 2> "$dir/err.txt"
check "standard input closed: exit 1" test $? -eq 1
run mt_translate -m "$model" -o "$dir/none/out.txt"
check "an output in a missing folder: exit 1" test $rc -eq 1
run mt_vocab info "$dir"
check "mt_vocab info DIR: exit 1, no abort (got $rc)" test $rc -eq 1
check "mt_vocab info DIR: says it is a directory" says "it is a directory"
run mt_model random --config tiny --vocab "$dir" -o "$dir/r.mtm"
check "mt_model random --vocab DIR: exit 1, no abort (got $rc)" test $rc -eq 1
run mt_model random --config tiny -o -
check "a model to standard output: refused, no file named -" test $rc -eq 1 -a ! -e "$PWD/-" -a -n "$(grep "needs a file name" "$dir/err.txt")"
run mt_model random --config tiny -o "$dir/none/r.mtm"
check "mt_model random into a missing folder: exit 1, no temporary file named" \
  test $rc -eq 1 -a -z "$(grep -F ".tmp." "$dir/err.txt")"
run mt_translate -m "$model" --device cuda --beam 1 -i "$dir/five.en"
if [ $rc -ne 0 ]; then
  check "--device cuda without a GPU: says why plainly" \
    grep -qE "no NVIDIA GPU driver|built without CUDA|sees no GPU" "$dir/err.txt"
fi

# mt_shortlist: a shortlist learnt from a few lines, described, used by
# default, compared with --no-shortlist, removed; its usage errors.
printf 'A man rides a bike.\nTwo dogs play in the snow.\nA woman is reading a book.\n' > "$dir/sl.en"
printf 'Ein Mann fährt Fahrrad.\nZwei Hunde spielen im Schnee.\nEine Frau liest ein Buch.\n' > "$dir/sl.de"
usage_error "mt_shortlist without a command" "a command is required" mt_shortlist
usage_error "mt_shortlist unknown command" "unknown command 'make'" mt_shortlist make "$model"
usage_error "mt_shortlist build without a corpus" "build needs --source FILE and --target FILE" \
  mt_shortlist build "$model" -o "$dir/sl.mtm"
usage_error "mt_shortlist build without -o" "build needs -o FILE" mt_shortlist build "$model" --source "$dir/sl.en" \
  --target "$dir/sl.de"
usage_error "mt_shortlist info with an option it does not read" "does not apply to 'info'" mt_shortlist info "$model" -k 3
usage_error "mt_shortlist -k 0" "--k" mt_shortlist random "$model" -k 0 -o "$dir/sl.mtm"
run mt_shortlist build "$model" --source "$dir/sl.en" --target "$dir/five.en" -o "$dir/sl.mtm"
check "mt_shortlist build with unpaired files: exit 1, says so" test $rc -eq 1 -a -n "$(grep "must pair up" "$dir/err.txt")"
run mt_shortlist build "$model" --source "$dir/sl.en" --target "$dir/sl.de" -k 5 --frequent 20 -o "$dir/sl.mtm"
check "mt_shortlist build: exit 0" test $rc -eq 0
check "mt_shortlist build: describes what it wrote" grep -q "shortlist of .* target ids over 8000 source ids" "$dir/out.txt"
run mt_shortlist info "$dir/sl.mtm"
check "mt_shortlist info: the method" grep -q "made by: ibm1 k=5 frequent=20 iterations=5 copies (3 sentence pairs)" "$dir/out.txt"
run mt_model info "$dir/sl.mtm"
check "mt_model info: the shortlist" grep -q "^shortlist       " "$dir/out.txt"
# A fourth sentence whose words the three pairs never saw: the model knows
# them, the shortlist does not let it write them.
{ cat "$dir/sl.en"; echo "A child sleeps on the sofa."; } > "$dir/sl4.en"
run mt_translate -m "$dir/sl.mtm" -i "$dir/sl4.en" -o "$dir/sl.out"
check "mt_translate with a shortlist (by default): exit 0, a line each" test $rc -eq 0 -a "$(lines "$dir/sl.out")" -eq 4
run mt_translate -m "$dir/sl.mtm" --no-shortlist -i "$dir/sl4.en" -o "$dir/sl.whole"
check "mt_translate --no-shortlist: exit 0" test $rc -eq 0
check "mt_translate: the 25 ids a sentence allows change its translations" test -n "$(cmp "$dir/sl.out" "$dir/sl.whole" 2>&1)"
run mt_translate -m "$dir/sl.mtm" --shortlist -i "$dir/sl4.en" -o "$dir/sl.again"
check "mt_translate --shortlist: as the default" cmp -s "$dir/sl.out" "$dir/sl.again"
usage_error "mt_translate --shortlist --no-shortlist" "choose one" mt_translate -m "$dir/sl.mtm" --shortlist --no-shortlist
run mt_translate -m "$model" --shortlist -i "$dir/sl.en"
check "mt_translate --shortlist with a model without one: exit 1, says how to give it one" \
  test $rc -eq 1 -a -n "$(grep "mt_shortlist build" "$dir/err.txt")"
run mt_shortlist remove "$dir/sl.mtm" -o "$dir/none.mtm"
run mt_shortlist info "$dir/none.mtm"
check "mt_shortlist remove: the model without it" grep -q "no shortlist" "$dir/out.txt"

# mt_model and mt_vocab: one file for info, vocabularies from model files.
usage_error "mt_model info without a file" "info takes one model file, not 0" mt_model info
usage_error "mt_model info with two files" "info takes one model file, not 2" mt_model info "$model" "$model"
usage_error "mt_model info with an option it does not read" "does not apply to 'info'" mt_model info "$model" --seed 3
usage_error "mt_model without a command" "a command is required" mt_model
run mt_model info "$model"
check "mt_model info: precision in the header" grep -q "^precision       int8 weights" "$dir/out.txt"
run mt_model info "$src/models/en-de-tiny.mtm"
check "mt_model info: fp32 said" grep -q "^precision       fp32" "$dir/out.txt"
check "mt_model info: no trailing spaces" test -z "$(grep ' $' "$dir/out.txt")"
run mt_vocab info "$model"
check "mt_vocab info MODEL: the embedded vocabulary" grep -q "^pieces          8000" "$dir/out.txt"
run mt_model random --config tiny --vocab "$model" -o "$dir/with-vocab.mtm"
check "mt_model random --vocab MODEL: exit 0" test $rc -eq 0
run mt_model random --config tiny --vocab "$model" -o "$dir/with-vocab.mtm"
check "mt_model random over an existing file: refused without --force" test $rc -eq 1 -a -n "$(grep "add --force" "$dir/err.txt")"
run mt_model random --config tiny --vocab "$model" -o "$dir/with-vocab.mtm" --force
check "mt_model random --force: replaces it" test $rc -eq 0
run mt_model vocab extract "$model" -o "$dir/extracted.model"
check "mt_model vocab extract: exit 0" test $rc -eq 0
run mt_vocab info "$dir/extracted.model"
check "the extracted vocabulary is a SentencePiece model mt_vocab reads" grep -q "^pieces          8000" "$dir/out.txt"
"$bin/mt_model" random --config tiny --vocab "$dir/extracted.model" -o "$dir/from-extracted.mtm" > /dev/null
check "a model made with the extracted vocabulary is the one made with the model's" \
  cmp -s "$dir/with-vocab.mtm" "$dir/from-extracted.mtm"
usage_error "mt_model vocab without extract" "vocab takes 'extract MODEL -o FILE'" mt_model vocab "$model"
"$bin/mt_vocab" train -i - -o "$dir/stdin.model" --vocab-size 60 --soft-limit < "$input" > /dev/null 2>&1
"$bin/mt_vocab" train -i "$input" -o "$dir/file.model" --vocab-size 60 --soft-limit > /dev/null 2>&1
# (The .model files differ only in the input path SentencePiece records.)
"$bin/mt_model" random --config tiny --vocab "$dir/stdin.model" -o "$dir/stdin.mtm" > /dev/null
"$bin/mt_model" random --config tiny --vocab "$dir/file.model" -o "$dir/file.mtm" > /dev/null
check "mt_vocab train -i -: standard input, the vocabulary of the same text as a file" \
  cmp -s "$dir/stdin.mtm" "$dir/file.mtm"
run mt_vocab train -i "$dir/five.en" -o "$dir/v.model" --vocab-size 5000
check "mt_vocab: a vocabulary too large for the text, in the user's terms" \
  grep -q "too small for 5000 pieces.*--soft-limit" "$dir/err.txt"

# mt_bleu: -l picks the Chinese tokenizer; 13a on Chinese warns.
printf '我们去学校。\n今天天气很好。\n' > "$dir/ref.zh"
"$bin/mt_bleu" "$dir/ref.zh" -i "$dir/ref.zh" > "$dir/out.txt" 2> "$dir/err.txt"
check "mt_bleu: Chinese under 13a warns" says "looks Chinese"
"$bin/mt_bleu" "$dir/ref.zh" -l en-zh -i "$dir/ref.zh" > "$dir/out.txt" 2> "$dir/err.txt"
check "mt_bleu -l en-zh: the zh tokenizer" grep -q "tok:zh" "$dir/out.txt"
check "mt_bleu: its signature is its own" grep -q "mt_bleu:[0-9.]*|as:sacrebleu-" "$dir/out.txt"
"$bin/mt_bleu" "$dir/ref.zh" -i - < "$dir/ref.zh" > /dev/null 2>&1
check "mt_bleu -i -: standard input" test $? -eq 0
scoring=$src/tests/data/scoring
"$bin/mt_bleu" "$scoring/ref.de" "$scoring/ref2.de" -i "$scoring/hyp.de" > "$dir/out.txt"
check "mt_bleu with two references: sacreBLEU's BLEU (tests/data/scoring/expected.tsv)" \
  grep -q "^BLEU|nrefs:2|.* = 63.74 90.0/74.1/56.3/44.0 " "$dir/out.txt"
check "mt_bleu with two references: sacreBLEU's chrF" grep -q "^chrF2|nrefs:2|.* = 78.26$" "$dir/out.txt"
head -3 "$scoring/ref2.de" > "$dir/short.de"
run mt_bleu "$scoring/ref.de" "$dir/short.de" -i "$scoring/hyp.de"
check "mt_bleu: a reference of another length is named" says "the reference '$dir/short.de' 3"

# --- mt_translate: output as it comes, nothing lost
# A pipe: each window (8 batches) is written before the next line is read.
mkfifo "$dir/fifo"
for i in $(seq 8); do echo "A dog runs $i."; done > "$dir/eight.en"
("$bin/mt_translate" -m "$model" --beam 1 --batch-size 1 < "$dir/fifo" > "$dir/stream.txt" 2>&1 &)
exec 3> "$dir/fifo"
cat "$dir/eight.en" >&3
for _ in $(seq 100); do [ "$(lines "$dir/stream.txt")" -ge 8 ] && break; sleep 0.1; done
check "a pipe: a full window is written while the input stays open" test "$(lines "$dir/stream.txt")" -eq 8
exec 3>&-
# A terminal: each line as it is typed (script gives the tool a terminal).
if command -v script > /dev/null; then
  mkfifo "$dir/tty-in"
  (script -qfec "'$bin/mt_translate' -m '$model' --beam 1" /dev/null < "$dir/tty-in" > "$dir/tty.txt" 2>&1 &)
  exec 4> "$dir/tty-in"
  echo "A dog runs." >&4
  for _ in $(seq 100); do [ -n "$(grep -a "Hund" "$dir/tty.txt")" ] && break; sleep 0.1; done
  check "a terminal: the line is translated before the next one is typed" grep -qa "Hund" "$dir/tty.txt"
  exec 4>&-
fi
# ids: a bad line is refused by its number, every other line translated.
{ for i in $(seq 150); do echo "5 6 $((i % 50 + 7))"; done; echo "5 x 7"; for i in $(seq 20); do echo "8 9"; done; } > "$dir/ids.txt"
"$bin/mt_model" random --config tiny -o "$dir/ids.mtm" > /dev/null
run mt_translate -m "$dir/ids.mtm" --beam 1 --max-length 4 -i "$dir/ids.txt"
check "a bad ids line: exit 1" test $rc -eq 1
check "a bad ids line: named by its number" says "line 151: expected space-separated non-negative token ids"
check "a bad ids line: every line has its output line" test "$(lines "$dir/out.txt")" -eq 171
check "a bad ids line: the others translated" test "$(grep -c . "$dir/out.txt")" -eq 170
# Memory: the batch follows the input, and a session too large says what to lower.
run mt_translate -m "$model" --beam 12 --batch-size 4096 -i "$dir/five.en"
check "--batch-size 4096 on 5 lines: planned for 5" test $rc -eq 0
(ulimit -v 1000000; exec "$bin/mt_translate" -m "$model" --beam 64 --batch-size 512 --max-length 1024 \
  -i "$src/tests/data/shipped_sentences.en") > /dev/null 2> "$dir/err.txt"
check "a session too large: exit 1" test $? -eq 1
check "a session too large: says which options to lower" says "lower --batch-size (512), --beam (64)"

# n-best: Marian's format, --scores honoured, blank lines give --nbest lines.
printf 'A dog runs.\n\n' > "$dir/two.en"
run mt_translate -m "$model" --beam 2 --nbest 2 --nbest-format marian -i "$dir/two.en"
check "--nbest-format marian: INDEX ||| TEXT ||| F0= LOGPROB ||| SCORE" \
  test "$(grep -cE '^[0-9]+ \|\|\| .* \|\|\| F0= -?[0-9.]+ \|\|\| -?[0-9.]+$' "$dir/out.txt")" -eq 4
run mt_translate -m "$model" --beam 2 --nbest 2 --scores -i "$dir/two.en"
check "--nbest --scores: INDEX ||| TEXT ||| SCORE, blank lines too" \
  test "$(grep -cE '^[0-9]+ \|\|\| .* \|\|\| -?[0-9.]+$' "$dir/out.txt")" -eq 4
run mt_translate -m "$model" --beam 2 --nbest 2 -i "$dir/two.en"
check "--nbest without --scores: INDEX ||| TEXT" test "$(grep -c '|||.*|||' "$dir/out.txt")" -eq 0
usage_error "--nbest-format without --nbest" "--nbest-format applies to --nbest 2 or more" mt_translate -m "$model" \
  --nbest-format marian

# --paragraphs: running text in, every byte between sentences kept.
head -n 10 "$src/tests/data/shipped_sentences.en" | awk '{ printf "%s%s", $0, (NR % 5 == 0 ? "\n\n" : (NR % 2 ? "  " : "\n")) }' \
  > "$dir/para.en"
head -n 10 "$src/tests/data/shipped_sentences.de-tiny-int8-greedy" |
  awk '{ printf "%s%s", $0, (NR % 5 == 0 ? "\n\n" : (NR % 2 ? "  " : "\n")) }' > "$dir/para.expected"
run mt_translate -m "$model" --beam 1 --paragraphs wrapped -i "$dir/para.en"
check "--paragraphs wrapped: exit 0 (got $rc)" test $rc -eq 0
check "--paragraphs wrapped: each sentence as alone, the source's spaces and line feeds kept" \
  cmp -s "$dir/out.txt" "$dir/para.expected"
"$bin/mt_translate" -m "$model" --beam 1 --paragraphs wrapped < "$dir/para.en" > "$dir/para.stdin"
check "--paragraphs from standard input: the same" cmp -s "$dir/para.stdin" "$dir/para.expected"
printf 'Dr. Smith runs.\n' > "$dir/dr.en"
"$bin/mt_translate" -m "$model" --beam 1 --paragraphs lines --prefix-language en -i "$dir/dr.en" > "$dir/dr.en.out"
run mt_translate -m "$model" --beam 1 --paragraphs lines --prefixes /dev/null -i "$dir/dr.en"
check "--prefixes FILE: an empty list splits after Dr., unlike English's" test $rc -eq 0 -a -s "$dir/out.txt"
check "--prefixes FILE: a different translation" test "$(cat "$dir/out.txt")" != "$(cat "$dir/dr.en.out")"
usage_error "--paragraphs with --ids" "--paragraphs translates text" mt_translate -m "$model" --paragraphs lines --ids
usage_error "--paragraphs with --nbest" "no --nbest or --scores" mt_translate -m "$model" --paragraphs lines --beam 2 \
  --nbest 2
usage_error "--paragraphs MODE" "expected one of lines, wrapped" mt_translate -m "$model" --paragraphs words
usage_error "--prefixes without --paragraphs" "apply to --paragraphs" mt_translate -m "$model" --prefixes x
run mt_translate -m "$model" --paragraphs lines --prefix-language xx -i "$dir/dr.en"
check "--prefix-language unknown: exit 1, names the lists" test $rc -eq 1 -a -n "$(grep 'there are' "$dir/err.txt")"

# --stream: words as they come on a terminal (script gives one), the same lines as without.
"$bin/mt_translate" -m "$model" --beam 1 -i "$dir/five.en" > "$dir/plain.txt"
if command -v script > /dev/null; then
  script -qec "'$bin/mt_translate' -m '$model' --beam 1 --stream -i '$dir/five.en'" /dev/null | tr -d '\r' \
    > "$dir/streamed.txt"
  check "--stream on a terminal: the same translations" cmp -s "$dir/plain.txt" "$dir/streamed.txt"
else
  echo "SKIP --stream on a terminal: no script(1)"
fi
"$bin/mt_translate" -m "$model" --beam 1 --stream -i "$dir/five.en" > "$dir/streamed-file.txt"
check "--stream to a file: unchanged output" cmp -s "$dir/plain.txt" "$dir/streamed-file.txt"
usage_error "--stream with --nbest" "no --nbest or --scores" mt_translate -m "$model" --stream --beam 2 --nbest 2

# --cache-size: the same output; repeated lines are found.
cat "$dir/five.en" "$dir/five.en" > "$dir/ten.en"
"$bin/mt_translate" -m "$model" --beam 2 -i "$dir/ten.en" > "$dir/uncached.txt"
run mt_translate -m "$model" --beam 2 --cache-size 100 -i "$dir/ten.en"
check "--cache-size: the same translations" cmp -s "$dir/out.txt" "$dir/uncached.txt"
usage_error "--cache-size 0" "expected a whole number in" mt_translate -m "$model" --cache-size 0

# --score: one line of numbers per pair; a translation scored gives its own log-probability.
"$bin/mt_translate" -m "$model" --beam 1 -i "$dir/five.en" > "$dir/greedy.de"
run mt_translate -m "$model" -i "$dir/five.en" --score "$dir/greedy.de"
check "--score: exit 0" test $rc -eq 0
check "--score: five lines" test "$(lines "$dir/out.txt")" -eq 5
check "--score: SCORE, LOGPROB and one log-probability per token and EOS" \
  test -z "$(awk -F'\t' 'NF != 3 || $1 > 0 || $2 > 0 || split($3, v, " ") < 2' "$dir/out.txt")"
"$bin/mt_translate" -m "$model" --beam 1 --scores -i "$dir/five.en" | cut -f1 > "$dir/greedy-scores.txt"
cut -f1 "$dir/out.txt" > "$dir/scored-scores.txt"
check "--score of greedy output: greedy's own scores" cmp -s "$dir/greedy-scores.txt" "$dir/scored-scores.txt"
head -n 2 "$dir/greedy.de" > "$dir/two.de"
run mt_translate -m "$model" -i "$dir/five.en" --score "$dir/two.de"
check "--score with too few lines: exit 1" test $rc -eq 1
check "--score with too few lines: says which" says "fewer lines than the input: none for line 3"
usage_error "--score with --nbest" "no --nbest" mt_translate -m "$model" --score x --beam 2 --nbest 2
usage_error "--score and --prefix" "choose one" mt_translate -m "$model" --score x --prefix y
# --prefix and --alternatives: every translation starts with the line's prefix.
printf 'Eine Frau\n\nDer\nEin\n\n' > "$dir/prefix.de"
run mt_translate -m "$model" --beam 1 -i "$dir/five.en" --prefix "$dir/prefix.de"
check "--prefix: exit 0" test $rc -eq 0
check "--prefix: line 1 starts with it" test "$(sed -n 1p "$dir/out.txt" | cut -c1-9)" = "Eine Frau"
check "--prefix: an empty prefix line is no prefix" test "$(sed -n 2p "$dir/out.txt")" = "$(sed -n 2p "$dir/greedy.de")"
run mt_translate -m "$model" -i "$dir/five.en" --prefix "$dir/prefix.de" --alternatives 3
check "--alternatives 3: three lines per input line" test "$(lines "$dir/out.txt")" -eq 15
check "--alternatives 3: distinct translations" test "$(sort -u "$dir/out.txt" | wc -l)" -eq 15
check "--alternatives: each starts with its prefix" test "$(grep -c '^0 ||| Eine Frau' "$dir/out.txt")" -eq 3
usage_error "--alternatives with --beam" "no --nbest or --beam" mt_translate -m "$model" --alternatives 2 --beam 2
usage_error "--alternatives 0" "expected a whole number in" mt_translate -m "$model" --alternatives 0
# --quality: TEXT, QUALITY, one score per word.
run mt_translate -m "$model" --beam 1 -i "$dir/five.en" --quality
check "--quality: the translations, then quality and word scores" \
  test "$(cut -f1 "$dir/out.txt")" = "$(cat "$dir/greedy.de")"
check "--quality: a score per word" \
  test -z "$(awk -F'\t' '{ if (NF != 3 || split($1, w, " ") != split($3, s, " ") || $2 > 0) print }' "$dir/out.txt")"
usage_error "--quality with --ids" "not with --ids" mt_translate -m "$model" --quality --ids -i "$dir/five.en"
# --alignments: "TEXT ||| S-T ...", word indices within each side's words.
run mt_translate -m "$model" --beam 1 -i "$dir/five.en" --alignments
check "--alignments: the translations, then ' ||| '" test "$(sed 's/ ||| .*//' "$dir/out.txt")" = "$(cat "$dir/greedy.de")"
paste "$dir/five.en" "$dir/out.txt" | awk -F'\t' '{
  n = split($1, src, " "); split($2, parts, " [|][|][|] "); m = split(parts[1], tgt, " ");
  k = split(parts[2], pairs, " "); if (k == 0) print "no pairs: " $0;
  for (i = 1; i <= k; ++i) { split(pairs[i], st, "-"); if (st[1] >= n || st[2] >= m) print "out of range: " pairs[i] }
}' > "$dir/bad-pairs.txt"
check "--alignments: pairs within the sentences' words" test ! -s "$dir/bad-pairs.txt"
check "--alignments: 'man' (word 1) links 'Mann' (word 1) in line 1" grep -q ' ||| .*\b1-1\b' <(sed -n 1p "$dir/out.txt")
usage_error "--alignments with --cache-size" "choose one" mt_translate -m "$model" --alignments --cache-size 10

# --format html: the document back with its tags, the text translated.
printf '<html><body>\n<h1>A <b>dog</b> runs.</h1>\n<p>A <i>woman</i> is reading &amp; <a href="x.html">a man</a> sleeps.</p><script>var a = "<p>";</script>\n</body></html>\n' > "$dir/page.html"
run mt_translate -m "$model" --format html -i "$dir/page.html"
check "--format html: exit 0" test $rc -eq 0
check "--format html: the same tags in the same number" \
  test "$(grep -o '<[^>]*>' "$dir/page.html" | sort | tr -d '\n')" = "$(grep -o '<[^>]*>' "$dir/out.txt" | sort | tr -d '\n')"
check "--format html: <b> on Hund" grep -q '<b>Hund</b>' "$dir/out.txt"
check "--format html: the script as it was" grep -qF '<script>var a = "<p>";</script>' "$dir/out.txt"
usage_error "--format html with --nbest" "writes the document back" mt_translate -m "$model" --format html --beam 2 --nbest 2
usage_error "--format xml" "expected one of text, html" mt_translate -m "$model" --format xml

# Repetition guards: the tiny model's "Schuhe Schuhe tragen Schuhe." for
# "shoes", no longer.
printf 'shoes\n' > "$dir/shoes.en"
shoes() { grep -ow Schuhe "$dir/out.txt" | wc -l; }
run mt_translate -m "$model" --beam 1 -i "$dir/shoes.en"
check "a word the tiny model repeats (the case the guards are for)" test "$(shoes)" -gt 2
run mt_translate -m "$model" --beam 1 -i "$dir/shoes.en" --no-repeat-ngram-size 1
check "--no-repeat-ngram-size 1: no word twice" test "$(shoes)" -le 1
run mt_translate -m "$model" --beam 1 -i "$dir/shoes.en" --repetition-penalty 1.3
check "--repetition-penalty 1.3: no longer three times" test "$(shoes)" -le 2
usage_error "--repetition-penalty 0.5" "expected a number in" mt_translate -m "$model" --repetition-penalty 0.5

# The CLI reference is the tools' own --help.
for tool in "${tools[@]}"; do
  [ -x "$bin/$tool" ] || continue
  "$bin/$tool" --help > "$dir/help.txt"
  awk -v t="$tool" '$0 == "## " t { on = 1; next } on && /^```$/ { if (started) exit; started = 1; next } on && started' \
    "$src/docs/cli.md" > "$dir/doc.txt"
  check "docs/cli.md holds $tool --help as it is (scripts/cli_docs.sh)" cmp -s "$dir/help.txt" "$dir/doc.txt"
done

echo "$failures failed"
[ "$failures" -eq 0 ]
