"""Measure the default ONNX models on this machine: embedding throughput and reranking cost.

    python benchmarks/models.py [--squad-dev PATH] [--sentences 2000] [--pairs 48]

Embedding: ~2,000 real sentences from squad-dev (articles split roughly on ". "), at several
batch sizes. Reranking: (question, window) pairs with windows of ~220 tokens built from
consecutive squad-dev sentences, at batch sizes 1/4/8/16, with and without length sorting,
plus the cost of padding every pair to 512 as the shipped tokenizer.json would.
Prints markdown tables. Not a test: numbers depend on the machine and on what else runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from windowrag_pg.embed.onnx_bge import OnnxBgeEmbedder, pad_batch, session_input_names
from windowrag_pg.rerank.onnx_cross_encoder import OnnxCrossEncoder

WINDOW_TOKENS = 220


def find_squad_dev(explicit: str | None) -> Path:
    candidates = [explicit, os.environ.get("WINDOWRAG_SQUAD_DEV"),
                  os.environ.get("WINDOWRAG_EVAL_DIR") and Path(os.environ["WINDOWRAG_EVAL_DIR"]) / "squad-dev",
                  Path(__file__).resolve().parents[2] / "shared" / "eval" / "squad-dev", "/work/shared/eval/squad-dev"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "documents.jsonl").is_file():
            return Path(candidate)
    sys.exit("squad-dev not found: pass --squad-dev PATH or set WINDOWRAG_SQUAD_DEV")


def load_sentences(data_dir: Path) -> list[str]:
    sentences = []
    for line in (data_dir / "documents.jsonl").open():
        text = json.loads(line)["text"].replace("\n\n", " ")
        sentences.extend(piece.strip() + "." for piece in text.split(". ") if piece.strip())
    return sentences


def load_questions(data_dir: Path, count: int) -> list[str]:
    questions = [json.loads(line)["query"] for line in (data_dir / "queries.jsonl").open()]
    return questions[:: max(1, len(questions) // count)][:count]


def build_windows(sentences: list[str], count_tokens, count: int) -> list[str]:
    """Consecutive sentences joined until the window reaches ~WINDOW_TOKENS tokens."""
    windows, current, current_tokens = [], [], 0
    token_counts = count_tokens(sentences[: count * 20])
    for sentence, tokens in zip(sentences, token_counts):
        current.append(sentence)
        current_tokens += tokens
        if current_tokens >= WINDOW_TOKENS - 25:  # sentences overshoot: this centres windows near WINDOW_TOKENS
            windows.append(" ".join(current))
            current, current_tokens = [], 0
            if len(windows) == count:
                break
    return windows


def reranker_token_counts(reranker: OnnxCrossEncoder, texts: list[str]) -> list[int]:
    encodings = reranker._query_tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    return [len(encoding.ids) for encoding in encodings]


def bench_embedding(embedder: OnnxBgeEmbedder, sentences: list[str], batch_sizes: list[int]) -> list[tuple]:
    embedder.embed_documents(sentences[:64])  # warm-up: session creation, thread pool, caches
    rows = []
    for batch_size in batch_sizes:
        started, cpu_started = time.perf_counter(), time.process_time()
        embedder.embed_documents(sentences, batch_size=batch_size)
        elapsed = time.perf_counter() - started
        cpu_ms_per_sentence = 1000 * (time.process_time() - cpu_started) / len(sentences)
        rows.append((batch_size, len(sentences) / elapsed, elapsed, cpu_ms_per_sentence))
    query_latencies = []
    for question in sentences[:30]:
        started = time.perf_counter()
        embedder.embed_query(question)
        query_latencies.append(time.perf_counter() - started)
    return rows, statistics.median(query_latencies)


def rerank_unsorted_ms_per_pair(reranker: OnnxCrossEncoder, pairs, batch_size: int, *, pad_to: int | None) -> float:
    """Same model calls as OnnxCrossEncoder.score but in input order (no length sorting)."""
    session = reranker._get_session()
    names = session_input_names(session)
    started = time.perf_counter()
    for query, windows in pairs:
        encodings = reranker._pair_tokenizer.encode_batch_fast([(query, window) for window in windows])
        if pad_to is not None:
            for encoding in encodings:
                encoding.pad(pad_to)
        for start in range(0, len(encodings), batch_size):
            session.run(None, pad_batch(encodings[start : start + batch_size], names))
    return 1000 * (time.perf_counter() - started) / sum(len(windows) for _, windows in pairs)


def rerank_sorted_ms_per_pair(reranker: OnnxCrossEncoder, pairs, batch_size: int) -> tuple[float, float]:
    """Wall and CPU ms per pair through OnnxCrossEncoder.score (CPU time is steadier on a busy machine)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    for query, windows in pairs:
        reranker.score(query, windows, batch_size=batch_size)
    pair_count = sum(len(windows) for _, windows in pairs)
    return (1000 * (time.perf_counter() - started) / pair_count,
            1000 * (time.process_time() - cpu_started) / pair_count)


def report_embedding(embedder: OnnxBgeEmbedder, sentences: list[str]) -> None:
    rows, query_latency = bench_embedding(embedder, sentences, [1, 8, 32, 64])
    mean_tokens = np.mean(embedder.count_tokens(sentences))
    print(f"### Embedding ({embedder.model_id}), {len(sentences)} squad-dev sentences, "
          f"mean {mean_tokens:.0f} tokens\n")
    print("| batch size | sentences/s | total s | CPU ms/sentence |\n|---:|---:|---:|---:|")
    for batch_size, rate, elapsed, cpu_ms in rows:
        print(f"| {batch_size} | {rate:.0f} | {elapsed:.1f} | {cpu_ms:.1f} |")
    print(f"\nembed_query latency (median of 30): {1000 * query_latency:.1f} ms")
    print(f"load average after embedding: {os.getloadavg()[0]:.2f}\n")


def report_reranking(reranker: OnnxCrossEncoder, data_dir: Path, sentences: list[str], pair_count: int) -> None:
    questions = load_questions(data_dir, 6)
    windows = build_windows(sentences, lambda texts: reranker_token_counts(reranker, texts), pair_count)
    # Each question gets an equal share of the windows: one score() call per question, as in a search.
    pairs = [(question, windows[i :: len(questions)]) for i, question in enumerate(questions)]
    window_tokens = reranker_token_counts(reranker, windows)
    reranker.score(questions[0], windows[:4])  # warm-up
    print(f"### Reranking ({reranker.model_id}), {sum(len(w) for _, w in pairs)} pairs per setting, "
          f"windows {min(window_tokens)}-{max(window_tokens)} tokens (mean {np.mean(window_tokens):.0f})\n")
    print("| batch size | ms/pair, length-sorted | CPU ms/pair, length-sorted | ms/pair, input order "
          "| ms/pair, padded to 512 |")
    print("|---:|---:|---:|---:|---:|")
    for batch_size in (1, 4, 8, 16):
        sorted_ms, sorted_cpu_ms = rerank_sorted_ms_per_pair(reranker, pairs, batch_size)
        unsorted_ms = rerank_unsorted_ms_per_pair(reranker, pairs, batch_size, pad_to=None)
        padded_ms = (rerank_unsorted_ms_per_pair(reranker, pairs, batch_size, pad_to=512)
                     if batch_size in (1, 8) else float("nan"))
        padded = f"{padded_ms:.1f}" if padded_ms == padded_ms else "–"
        print(f"| {batch_size} | {sorted_ms:.1f} | {sorted_cpu_ms:.1f} | {unsorted_ms:.1f} | {padded} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad-dev", help="folder with documents.jsonl and queries.jsonl")
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=48, help="(question, window) pairs per rerank setting")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--only", choices=["embed", "rerank"], help="run one part (on a shared, busy machine)")
    args = parser.parse_args()

    data_dir = find_squad_dev(args.squad_dev)
    sentences = load_sentences(data_dir)[: args.sentences]
    embedder = OnnxBgeEmbedder(threads=args.threads)
    reranker = OnnxCrossEncoder(threads=args.threads)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} cores, onnxruntime threads {embedder.threads}, load average {load:.2f}\n")

    if args.only != "rerank":
        report_embedding(embedder, sentences)
    if args.only != "embed":
        report_reranking(reranker, data_dir, sentences, args.pairs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nload average at the end: {load:.2f}")


if __name__ == "__main__":
    main()
