#!/usr/bin/env python3
"""PyTorch eager reference for BM_ConvTutorialStep in benchmarks/gpu_training_bench.cu (issue 62):
TensorFlow's "Distributed training with Keras" model — Conv2D(32, 3, relu), MaxPooling2D, Flatten,
Dense(64, relu), Dense(10) — as PyTorch writes it (NCHW, PyTorch's default layout), cross-entropy
from logits, Adam (Keras's defaults: lr 1e-3, eps 1e-7), the batch's accuracy computed as Keras's
metric does, batch 64 of 28x28x1 resident on GPU 0, synchronising after every step as the
devtensor benchmark does. TF32 off for the convolutions and matmuls (benchmarks/gpu_bench_main.cpp turns it off for devtensor; PyTorch's
own default allows it in cuDNN), so both compute in float32. Prints one JSON object: the median,
min and max step time in microseconds over `--repetitions` runs of `--steps` steps; then a second,
torch_ConvTutorialStepAutocastBf16, the same step under torch.autocast(dtype=torch.bfloat16)
(issue 65's reference for BM_ConvTutorialStepBf16, mixed_bfloat16). Run by
scripts/gpu-check when `python3 -c 'import torch'` works.
"""
import argparse
import json
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    device = torch.device("cuda:0")
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(13 * 13 * 32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(64, 1, 28, 28, device=device)
    labels = torch.tensor([(i * 7) % 10 for i in range(64)], device=device)

    autocast = False

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(x).float()
        loss = loss_fn(logits, labels)
        loss.backward()
        optimizer.step()
        accuracy = (logits.argmax(dim=1) == labels).float().mean()
        torch.cuda.synchronize()
        return loss, accuracy

    for name in ("torch_ConvTutorialStep", "torch_ConvTutorialStepAutocastBf16"):
        autocast = name.endswith("AutocastBf16")
        for _ in range(5):
            step()
        per_step = []
        for _ in range(args.repetitions):
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
            per_step.append((time.perf_counter() - start) / args.steps * 1e6)
        print(json.dumps({"name": name, "median_us": statistics.median(per_step), "min_us": min(per_step),
                          "max_us": max(per_step), "torch": torch.__version__,
                          "gpu": torch.cuda.get_device_name(0)}), flush=True)


if __name__ == "__main__":
    main()
