"""transformers and libmt side by side on a trained MarianMTModel (train_hf_marian.py's): the same
test sentences translated by transformers' generate() and by the converted libmt model, fp32 and
int8; identical outputs and BLEU of each.

    HF_HUB_OFFLINE=1 V/bin/python bench/converters/compare_hf_marian.py --model runs/hf-marian-en-de/hf \\
        --data ../shared/data/multi30k --build build --out runs/hf-marian-en-de/compare

Needs the venv of train_hf_marian.py and the libmt package (PYTHONPATH=build-py/python or installed);
mt_quantize and mt_bleu from --build. Prints a Markdown table.
"""

import argparse
import pathlib
import subprocess
import time

import torch
from transformers import MarianMTModel, MarianTokenizer

import libmt
from libmt import convert


def read(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def hf_translate(model, tokenizer, lines, beams, batch=32):
    out = []
    for i in range(0, len(lines), batch):
        chunk = lines[i:i + batch]
        enc = tokenizer(chunk, return_tensors="pt", padding=True)
        with torch.no_grad():
            ids = model.generate(**enc, num_beams=beams, max_length=128, early_stopping=True, do_sample=False)
        out += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return out


def bleu(build, reference, hypotheses, out):
    path = out / "hyp.txt"
    path.write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    run = subprocess.run([str(build / "tools" / "mt_bleu"), str(reference), "-i", str(path), "--metrics", "bleu",
                          "--score-only"], capture_output=True, text=True, check=True)
    return float(run.stdout.split()[0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--build", default="build")
    parser.add_argument("--out", required=True)
    parser.add_argument("--split", default="test_2016_flickr")
    args = parser.parse_args()
    torch.set_num_threads(2)
    data, build, out = pathlib.Path(args.data), pathlib.Path(args.build), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sources = read(data / f"{args.split}.en")
    reference = data / f"{args.split}.de"

    fp32 = out / "model.mtm"
    conversion = convert.convert("transformers", args.model, fp32)
    calibration = out / "calibration.en"
    calibration.write_text("\n".join(read(data / "train.en")[:1000]) + "\n", encoding="utf-8")
    int8 = out / "model.int8.mtm"
    subprocess.run([str(build / "tools" / "mt_quantize"), str(fp32), "--calibration", str(calibration), "-o",
                    str(int8), "--force"], check=True, capture_output=True)

    hf = MarianMTModel.from_pretrained(args.model).eval()
    tokenizer = MarianTokenizer.from_pretrained(args.model)
    rows = []
    for beams in (1, 4):
        start = time.time()
        hf_out = hf_translate(hf, tokenizer, sources, beams)
        hf_seconds = time.time() - start
        results = {}
        for name, path in (("libmt fp32", fp32), ("libmt int8", int8)):
            translator = libmt.Translator(str(path), max_beam_size=4, max_batch_size=32, num_threads=2,
                                          max_target_length=128)
            start = time.time()
            results[name] = (translator.translate(sources, beam_size=beams, max_decoding_length=127),
                             time.time() - start)
        hf_bleu = bleu(build, reference, hf_out, out)
        rows.append((beams, "transformers", hf_bleu, "", f"{hf_seconds:.1f}"))
        for name, (hyps, seconds) in results.items():
            same = sum(a == b for a, b in zip(hyps, hf_out)) / len(sources)
            rows.append((beams, name, bleu(build, reference, hyps, out), f"{100 * same:.1f}%", f"{seconds:.1f}"))
        (out / f"hf.beam{beams}.de").write_text("\n".join(hf_out) + "\n", encoding="utf-8")
        (out / f"libmt.beam{beams}.de").write_text("\n".join(results["libmt fp32"][0]) + "\n", encoding="utf-8")

    print(f"{args.split}: {len(sources)} sentences; model {conversion.config.parameter_count:,} parameters\n")
    print("| search | engine | BLEU | identical to transformers | seconds (2 threads, batch 32) |")
    print("|---|---|---|---|---|")
    for beams, name, score, same, seconds in rows:
        print(f"| {'greedy' if beams == 1 else f'beam {beams}'} | {name} | {score:.2f} | {same} | {seconds} |")


if __name__ == "__main__":
    main()
