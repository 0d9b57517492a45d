"""The transformers engine on a CUDA GPU against the same machine's CPU: contract, agreement and speed.

Runs the package's LM and embedder batteries (:mod:`ucs.testing`) on the backbone placed on ``cuda`` (float32
and bfloat16), checks the one-pass tree-mask label scoring against a plain forward pass per label on the GPU,
compares GPU float32 with CPU float32 (embeddings, label scores, the label each prompt picks, greedy
continuations) and times embedding, label scoring and generation on both, side by side in one process; then
the same for one long prompt (about 4.6k tokens, the size of a BBEH prompt), where the model's own arithmetic
rather than per-call overhead decides the time.

Texts are the shipped sample dataset's (150 utterances, 10 intents), so nothing outside the package is read
but the model file::

    PYTHONPATH=src python benchmarks/models/check_cuda.py --model path/to/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --out benchmarks/models/cuda.json

Without a GPU it runs the CPU half only and says so. Output: one JSON document (stdout, and ``--out``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from typing import Any, Dict, List

import numpy as np

from ucs.data import load_dataset
from ucs.models.hf import TransformersBackbone
from ucs.testing import check_embedder, check_language_model

LM_CLAUSES = ["scores", "scores_per_continuation", "generate", "sample_seeds", "tokens"]
EMBEDDER_CLAUSES = ["shape", "rows_independent", "deterministic", "identity", "empty", "batch_order"]


def prompts_and_labels(n: int) -> "tuple[List[str], List[str], List[str]]":
    """``n`` likelihood prompts over the sample dataset (4 demonstrations each), the label continuations,
    texts."""
    ds = load_dataset("sample")
    texts, labels, names = ds.pool.texts, ds.pool.labels, ds.label_names
    prompts = []
    for q in range(n):
        demos = [(q * 7 + k * 31) % len(texts) for k in range(1, 5)]
        body = "".join(f"Text: {texts[i]}\nLabel: {names[labels[i]]}\n\n" for i in demos)
        prompts.append(body + f"Text: {texts[q]}\nLabel:")
    return prompts, [" " + n_ for n_ in names], list(texts)


def naive_scores(bb: TransformersBackbone, prefix: str, conts: List[str]) -> np.ndarray:
    """Sum log-probability of each continuation from its own full forward pass (no tree mask)."""
    import torch

    from ucs.lm.prefix_tree import move_trailing_spaces

    prefix, conts = move_trailing_spaces(prefix, conts)
    p = bb.tokenize(prefix)
    out = []
    for c in conts:
        t = bb.tokenize(c, add_special=False)
        ids = torch.tensor([p + t], device=bb._device)
        with torch.inference_mode():
            lp = torch.log_softmax(bb._model(ids).logits[0].double(), -1)
        out.append(sum(lp[len(p) - 1 + i, tok].item() for i, tok in enumerate(t)))
    return np.array(out)


def timed(fn, *args, repeat: int = 1, sync: bool = False) -> "tuple[Any, float]":
    """``fn(*args)`` and its wall time per call (mean of ``repeat`` after one warm-up call)."""
    import torch

    out = fn(*args)
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn(*args)
    if sync:
        torch.cuda.synchronize()
    return out, (time.perf_counter() - t0) / repeat


def measure(
    bb: TransformersBackbone, prompts: List[str], labels: List[str], texts: List[str], sync: bool
) -> Dict[str, Any]:
    emb, t_emb = timed(bb.embed, texts, sync=sync)
    scores, t_score = timed(
        lambda: np.array([bb.score_continuations(p, labels, "sum") for p in prompts]), sync=sync
    )
    gen, t_gen = timed(lambda: bb.generate(prompts[:5], max_new_tokens=16, temperature=0.0), sync=sync)
    return {
        "emb": emb,
        "scores": scores,
        "gen": gen,
        "timing": {
            "embed_texts_per_s": len(texts) / t_emb,
            "score_s_per_prompt": t_score / len(prompts),
            "generate_s_per_prompt": t_gen / 5,
        },
    }


def long_prompt(model: str, devices: List["tuple[str, str]"]) -> Dict[str, Any]:
    """Label scoring (mean of 3) and 16 greedy tokens after one ~4.6k-token prompt, per (device, dtype)."""
    ds = load_dataset("sample")
    t, y, names = ds.pool.texts, ds.pool.labels, ds.label_names
    body = "".join(f"Text: {t[i % len(t)]}\nLabel: {names[y[i % len(t)]]}\n\n" for i in range(400))
    prompt, labels = body[-16000:] + f"Text: {t[0]}\nLabel:", [" " + n for n in names]
    out: Dict[str, Any] = {}
    for dev, dtype in devices:
        bb = TransformersBackbone(model, device=dev, dtype=dtype)
        sync = dev.startswith("cuda")
        scores, t_score = timed(bb.score_continuations, prompt, labels, repeat=3, sync=sync)
        _, t_gen = timed(lambda: bb.generate([prompt], max_new_tokens=16), repeat=1, sync=sync)
        out[f"{dev}_{dtype}"] = {
            "prompt_tokens": bb.count_tokens(prompt),
            "score_s": t_score,
            "generate16_s": t_gen,
            "scores": [float(x) for x in scores],
        }
    ref = np.array(out["cpu_float32"]["scores"])
    for k, v in out.items():
        v["score_max_abs_vs_cpu_float32"] = float(np.abs(np.array(v["scores"]) - ref).max())
    return out


def run(model: str, n_prompts: int) -> Dict[str, Any]:
    import torch

    prompts, labels, texts = prompts_and_labels(n_prompts)
    report: Dict[str, Any] = {
        "model": model,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu_threads": torch.get_num_threads(),
        "n_prompts": n_prompts,
        "n_texts": len(texts),
        "n_labels": len(labels),
    }
    cpu = TransformersBackbone(model, device="cpu", dtype="float32")
    ref = measure(cpu, prompts, labels, texts, sync=False)
    report["cpu_float32"] = ref["timing"]
    if not torch.cuda.is_available():
        report["cuda"] = "not available: CPU half only"
        report["long_prompt"] = long_prompt(model, [("cpu", "float32")])
        return report
    report["gpu"] = torch.cuda.get_device_name(0)
    for dtype in ("float32", "bfloat16"):
        gpu = TransformersBackbone(model, device="cuda", dtype=dtype)
        res: Dict[str, Any] = {
            "lm_battery": check_language_model(gpu, LM_CLAUSES),
            "embedder_battery": check_embedder(gpu, EMBEDDER_CLAUSES),
            "l2_twin_battery": check_embedder(
                TransformersBackbone(model, device="cuda", dtype=dtype, normalize=True), ["unnormalized"]
            ),
        }
        tree = gpu.score_continuations_detailed(prompts[0], labels).logprob
        res["tree_vs_naive_max_abs"] = float(np.abs(tree - naive_scores(gpu, prompts[0], labels)).max())
        got = measure(gpu, prompts, labels, texts, sync=True)
        a, b = got["emb"], ref["emb"]
        cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        res["vs_cpu_float32"] = {
            "embedding_cosine_min": float(cos.min()),
            "score_max_abs": float(np.abs(got["scores"] - ref["scores"]).max()),
            "same_label_picked": float((got["scores"].argmax(1) == ref["scores"].argmax(1)).mean()),
            "same_greedy_continuation": float(np.mean([x == y for x, y in zip(got["gen"], ref["gen"])])),
        }
        res["timing"] = got["timing"]
        res["speedup_vs_cpu_float32"] = {
            k: (
                got["timing"][k] / ref["timing"][k]
                if k.endswith("per_s")
                else ref["timing"][k] / got["timing"][k]
            )
            for k in got["timing"]
        }
        report[f"cuda_{dtype}"] = res
        del gpu
        torch.cuda.empty_cache()
    report["long_prompt"] = long_prompt(
        model, [("cpu", "float32"), ("cuda", "float32"), ("cuda", "bfloat16")]
    )
    return report


def main(argv: "List[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="GGUF file or transformers model directory")
    ap.add_argument("--prompts", type=int, default=40, help="likelihood prompts to score and compare")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)
    report = run(args.model, args.prompts)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
