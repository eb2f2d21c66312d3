#!/usr/bin/env python3
"""The cost of Ray: a corpus translated by libmt.ray.translate_file on a
local Ray cluster (--actors actors of one thread each) against mt_translate
--threads (one process, a thread per core) on the same file, side by side in
one run, alternating, median of --repeats. Both outputs must be the same
bytes. Reports sentences/s and Ray's rate as a share of mt_translate's;
Ray's time includes starting its actors and loading the model in each (once
per call), not ray.init().

    python3 bench/python/ray_corpus.py [--model models/en-de-tiny.int8.mtm]
        [--input ../shared/data/multi30k/test_2016_flickr.en] [--copies 8]
        [--beam 4] [--actors 2] [--block-size 1024] [--repeats 3] [--mt-translate build/tools/mt_translate]

Needs the libmt package with Ray Data importable (pip install '.[ray]', or
PYTHONPATH=build/python with ray[data] installed).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import ray

import libmt.ray


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="models/en-de-tiny.int8.mtm")
    parser.add_argument("--input", default="../shared/data/multi30k/test_2016_flickr.en")
    parser.add_argument("--copies", type=int, default=8, help="the input repeated this many times")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--block-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mt-translate", default="build/tools/mt_translate")
    args = parser.parse_args()

    with open(args.input, "rb") as f:
        text = f.read()
    work = tempfile.mkdtemp(prefix="ray_corpus.")
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "wb") as f:
        f.write(text * args.copies)
    lines = text.count(b"\n") * args.copies

    ray.init(num_cpus=args.actors, include_dashboard=False, log_to_driver=False)
    command = [args.mt_translate, "-m", args.model, "--threads", str(args.actors), "--beam", str(args.beam)]
    times = {"mt_translate": [], "ray": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        with open(corpus, "rb") as source, open(os.path.join(work, "mt.out"), "wb") as target:
            subprocess.run(command, stdin=source, stdout=target, check=True)
        times["mt_translate"].append(time.perf_counter() - start)
        start = time.perf_counter()
        libmt.ray.translate_file(corpus, os.path.join(work, "ray.out"), args.model, concurrency=args.actors,
                                 block_size=args.block_size, beam_size=args.beam, progress=False,
                                 translator_options={"max_beam_size": max(args.beam, 1)})
        times["ray"].append(time.perf_counter() - start)
    with open(os.path.join(work, "mt.out"), "rb") as a, open(os.path.join(work, "ray.out"), "rb") as b:
        if a.read() != b.read():
            print("ray_corpus: the outputs differ (%s)" % work, file=sys.stderr)
            return 1
    ray.shutdown()

    print("%d lines, %s, beam %d, %d actors x 1 thread vs mt_translate --threads %d; median of %d"
          % (lines, os.path.basename(args.model), args.beam, args.actors, args.actors, args.repeats))
    rates = {}
    for name, seconds in times.items():
        median = statistics.median(seconds)
        rates[name] = lines / median
        print("%-13s %8.2f s  %8.0f sentences/s   (runs: %s)"
              % (name, median, rates[name], ", ".join("%.2f" % s for s in seconds)))
    print("ray / mt_translate: %.2fx the sentences/s" % (rates["ray"] / rates["mt_translate"]))
    for name in ("corpus.txt", "mt.out", "ray.out"):
        os.remove(os.path.join(work, name))
    os.rmdir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
