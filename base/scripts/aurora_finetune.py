"""aurora-finetune: LoRA fine-tuning of Microsoft's Aurora weather model (the small pretrained checkpoint from the
Hugging Face Hub, microsoft/aurora) as one Ray task on one GPU (AURORA_REQUIRE_GPU_NAME checks which), on a batch of
atmospheric state built here. Fails on a non-finite loss; the loss history and the LoRA weights go to
aurora/checkpoints/<AURORA_RUN_ID>/."""
import io
import math
import os

import ray

from ray_storage import upload, upload_json

STEPS = int(os.environ.get("AURORA_MAX_STEPS", "3"))


@ray.remote(num_gpus=1, num_cpus=4)
def finetune(steps: int, require_gpu: str) -> tuple[list[float], bytes]:
    from datetime import datetime

    import torch
    from aurora import AuroraSmall, Batch, Metadata  # microsoft-aurora (runtimeEnvYAML)

    gpu = torch.cuda.get_device_name(0)
    if require_gpu and require_gpu not in gpu:
        raise RuntimeError(f"AURORA_REQUIRE_GPU_NAME={require_gpu}, but this node's GPU is {gpu}")
    model = AuroraSmall(use_lora=True)
    model.load_checkpoint("microsoft/aurora", "aurora-0.25-small-pretrained.ckpt", strict=False)  # no LoRA weights in it
    model = model.cuda().train()
    lora = [p for name, p in model.named_parameters() if "lora" in name]
    for name, p in model.named_parameters():
        p.requires_grad = "lora" in name
    optimizer = torch.optim.AdamW(lora, lr=1e-4)

    def state(t: datetime) -> Batch:  # two history steps on a 17 x 32 grid, four pressure levels
        g = torch.Generator().manual_seed(t.hour)
        return Batch(surf_vars={k: torch.randn(1, 2, 17, 32, generator=g) for k in ("2t", "10u", "10v", "msl")},
                     static_vars={k: torch.randn(17, 32, generator=g) for k in ("lsm", "z", "slt")},
                     atmos_vars={k: torch.randn(1, 2, 4, 17, 32, generator=g) for k in ("z", "u", "v", "t", "q")},
                     metadata=Metadata(lat=torch.linspace(90, -90, 17), lon=torch.linspace(0, 360, 32 + 1)[:-1],
                                       time=(t,), atmos_levels=(100, 250, 500, 850)))

    inputs, target = state(datetime(2021, 8, 29, 0)).to("cuda"), state(datetime(2021, 8, 29, 6)).to("cuda")
    losses = []
    for _ in range(steps):
        pred = model(inputs)
        loss = sum((pred.surf_vars[k][:, 0] - target.surf_vars[k][:, -1]).abs().mean() for k in pred.surf_vars)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    weights = io.BytesIO()
    torch.save({name: p.detach().cpu() for name, p in model.named_parameters() if "lora" in name}, weights)
    return losses, weights.getvalue()


def main() -> None:
    ray.init()
    run_id = os.environ.get("AURORA_RUN_ID", "aurora-finetune")
    losses, weights = ray.get(finetune.remote(STEPS, os.environ.get("AURORA_REQUIRE_GPU_NAME", "")))
    print(f"{STEPS} LoRA steps, loss history {losses}")
    upload_json("aurora", f"checkpoints/{run_id}/train-metrics.json", {"steps": STEPS, "loss_history": losses})
    upload("aurora", f"checkpoints/{run_id}/lora.pt", weights)
    if not all(math.isfinite(x) for x in losses):
        raise SystemExit(f"non-finite loss: {losses}")


if __name__ == "__main__":
    main()
