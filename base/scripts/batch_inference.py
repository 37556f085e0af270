"""batch-inference: offline batch generation with vLLM inside Ray Data (one GPU replica, batches of 16) over prompts
built here; the model (INFERENCE_MODEL, a small instruct model by default) comes from the Hugging Face Hub. The
predictions go to llm-pipeline/inference/<INFERENCE_RUN_ID>/predictions.jsonl; fails when an answer is empty."""
import json
import os

import ray

from ray_storage import upload

MODEL = os.environ.get("INFERENCE_MODEL", "Qwen/Qwen2.5-0.5B-Instruct")
SUBJECTS = ("a GPU quota", "a cohort of teams", "preemption", "a Ray head node", "a batch job", "a node pool", "borrowing", "a queue")


class Generate:
    def __init__(self) -> None:
        from vllm import LLM, SamplingParams  # runtimeEnvYAML pip

        self.llm, self.params = LLM(model=MODEL, max_model_len=4096), SamplingParams(temperature=0.0, max_tokens=64)

    def __call__(self, batch: dict) -> dict:
        outputs = self.llm.generate(list(batch["prompt"]), self.params)
        return {"prompt": batch["prompt"], "answer": [o.outputs[0].text.strip() for o in outputs]}


def main() -> None:
    ray.init()
    run_id = os.environ.get("INFERENCE_RUN_ID", "batch-inference")
    prompts = [{"prompt": f"In one sentence, explain {s} to a {who}."} for s in SUBJECTS for who in ("student", "manager", "engineer", "child")]
    rows = ray.data.from_items(prompts).map_batches(Generate, batch_size=16, concurrency=1, num_gpus=1).take_all()
    print(f"{len(rows)} predictions with {MODEL}; first: {rows[0]['answer']!r}")
    upload("llm-pipeline", f"inference/{run_id}/predictions.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    if len(rows) != len(prompts) or not all(r["answer"] for r in rows):
        raise SystemExit("some prompts got no answer")


if __name__ == "__main__":
    main()
