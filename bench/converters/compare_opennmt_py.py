"""OpenNMT-py's own translations of Multi30k test_2016_flickr (en->de) side by side with libmt's on
the same checkpoint (train_opennmt_py.py made it): greedy and beam 5, libmt in fp32 and int8
(--quantize int8: dynamic activation scales; with --calibration: calibrated on 1,000 training
sources), BLEU (sacreBLEU, detokenized) and identical sentences.

    V/bin/python bench/converters/compare_opennmt_py.py --run runs/onmt-en-de --checkpoint model_step_3000.pt \\
        --data ../shared/data/multi30k --mt-translate build/tools/mt_translate > report.md

onmt_translate runs with its defaults (length_penalty avg, max_length 250) on one thread; libmt with
the converted model's own defaults (its length offset counts <s> as OpenNMT-py does).
"""

import argparse
import os
import pathlib
import subprocess
import sys
import time

import sacrebleu
import sentencepiece as spm


def read(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True, type=pathlib.Path)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", required=True, type=pathlib.Path)
    parser.add_argument("--mt-translate", required=True)
    parser.add_argument("--split", default="test_2016_flickr")
    args = parser.parse_args()
    run = args.run.resolve()
    checkpoint = run / args.checkpoint
    sp = spm.SentencePieceProcessor(model_file=str(run / "sentencepiece.model"))
    source = read(args.data / f"{args.split}.en")
    reference = read(args.data / f"{args.split}.de")
    bin_dir = pathlib.Path(sys.executable).parent
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

    outputs, seconds = {}, {}
    for beam in (1, 5):
        out = run / f"onmt.beam{beam}.sp"
        start = time.time()
        subprocess.run([str(bin_dir / "onmt_translate"), "-model", str(checkpoint), "-src",
                        str(run / f"{args.split}.en.sp"), "-output", str(out), "-beam_size", str(beam),
                        "-batch_size", "32", "-gpu", "-1"], check=True, env=env, capture_output=True)
        seconds[f"OpenNMT-py beam {beam}"] = time.time() - start
        outputs[f"OpenNMT-py beam {beam}"] = [sp.decode(line.split()) for line in read(out)]

    # Calibrated int8 on the first 1,000 training sources (never the test set).
    calibration = run / "calibration.en"
    calibration.write_text("\n".join(read(args.data / "train.en")[:1000]) + "\n", encoding="utf-8")
    for precision, extra in (("fp32", []), ("int8", ["--quantize", "int8"]),
                             ("int8 calibrated", ["--quantize", "int8", "--calibration", str(calibration)])):
        model = run / f"libmt-{precision.replace(' ', '-')}.mtm"
        subprocess.run([sys.executable, "-m", "libmt.convert", "--from", "opennmt-py", str(checkpoint), "-o",
                        str(model), "--source-spm", str(run / "sentencepiece.model"), "--force"] + extra, check=True)
        for beam in (1, 5):
            start = time.time()
            result = subprocess.run([args.mt_translate, "-m", str(model), "--beam", str(beam), "--threads", "1"],
                                    input="\n".join(source) + "\n", capture_output=True, text=True, check=True)
            name = f"libmt {precision} beam {beam}"
            seconds[name] = time.time() - start
            outputs[name] = result.stdout.split("\n")[:-1]

    print(f"Multi30k {args.split} en->de, {len(source)} sentences; checkpoint {args.checkpoint}\n")
    print("| system | BLEU | identical to OpenNMT-py (same beam) | seconds, 1 thread |")
    print("|---|---|---|---|")
    for name, lines in outputs.items():
        assert len(lines) == len(source), (name, len(lines))
        bleu = sacrebleu.corpus_bleu(lines, [reference]).score
        beam = name.split()[-1]
        same = sum(a == b for a, b in zip(lines, outputs[f"OpenNMT-py beam {beam}"])) / len(source)
        print(f"| {name} | {bleu:.2f} | {100 * same:.1f}% | {seconds[name]:.1f} |")


if __name__ == "__main__":
    main()
