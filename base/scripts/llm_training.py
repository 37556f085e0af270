"""llm-training: data-parallel training of a small causal language model (GPT-2 architecture, 2 layers) with Ray Train
on NUM_WORKERS GPU workers, one GPU each, gradients all-reduced over NCCL. The text is generated here (no dataset or
model download). Fails unless the loss falls; the loss history goes to llm-pipeline/runs/<LLM_RUN_ID>/metrics.json."""
import os

import ray
import ray.train
import torch
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, get_device, prepare_model

from ray_storage import upload_json

SEQ, BATCH = 64, 16
TEXT = " ".join(f"queue {q} admits job {j} when {g} gpus are free." for q in ("team-a", "team-b") for j in range(50) for g in (1, 2, 4))


def train_loop(config: dict) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel  # a dependency of llamafactory (runtimeEnvYAML)

    torch.manual_seed(0)  # the same initial weights on every worker
    model = prepare_model(GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=SEQ, n_embd=128, n_layer=2, n_head=4)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.tensor(list(TEXT.encode()), dtype=torch.long)
    rng = torch.Generator().manual_seed(ray.train.get_context().get_world_rank())  # each worker its own batches
    losses = []
    for step in range(config["steps"]):
        starts = torch.randint(0, len(data) - SEQ, (BATCH,), generator=rng).tolist()
        batch = torch.stack([data[s:s + SEQ] for s in starts]).to(get_device())
        loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(round(loss.item(), 4))
        if step % 25 == 0 or step == config["steps"] - 1:
            ray.train.report({"step": step, "loss": losses[-1], "losses": losses})


def main() -> None:
    ray.init()
    workers, steps = int(os.environ.get("NUM_WORKERS", "1")), int(os.environ.get("LLM_STEPS", "200"))
    run_id = os.environ.get("LLM_RUN_ID", "llm-training")
    result = TorchTrainer(train_loop, train_loop_config={"steps": steps},
                          scaling_config=ScalingConfig(num_workers=workers, use_gpu=True),
                          run_config=RunConfig(name=run_id)).fit()
    losses = result.metrics["losses"]
    print(f"{workers} workers, {steps} steps: loss {losses[0]} -> {losses[-1]}")
    upload_json("llm-pipeline", f"runs/{run_id}/metrics.json", {"workers": workers, "steps": steps, "losses": losses})
    if not losses[-1] < 0.5 * losses[0]:
        raise SystemExit(f"the loss did not fall: {losses[0]} -> {losses[-1]}")


if __name__ == "__main__":
    main()
