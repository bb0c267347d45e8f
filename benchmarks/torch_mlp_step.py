#!/usr/bin/env python3
"""PyTorch eager reference for benchmarks/gpu_training_bench.cu (issue 15): the same MLP
(1024 -> H -> H -> 1, ReLU, MSE, batch 256) and step (forward, backward, SGD lr 0.01 or Adam),
synchronising after every step as the devtensor benchmark does. Prints one JSON object per case
with the median, min and max step time in microseconds over `--repetitions` runs of `--steps`
steps. Then the SGD step replayed from a CUDA graph (torch_MlpStepGraph_SGD/H), and the SGD step
under torch.autocast(dtype=torch.bfloat16) (torch_MlpStepAutocastBf16_SGD/H, issue 65's reference
for devtensor's mixed_bfloat16 fit step). Run by scripts/gpu-check
when `python3 -c 'import torch'` works.
"""
import argparse
import json
import statistics
import time

import torch


def mlp_and_data(hidden):
    """The benchmark's model (seeded) and one batch, on GPU 0."""
    torch.manual_seed(0)
    device = torch.device("cuda:0")
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, 1)).to(device)
    return model, torch.randn(256, 1024, device=device), torch.randn(256, 1, device=device)


def result(name, per_step):
    """One case's line: the median, min and max step time in microseconds."""
    return {"name": name, "median_us": statistics.median(per_step), "min_us": min(per_step),
            "max_us": max(per_step), "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}


def run(hidden, optimizer_name, steps, repetitions, autocast=False):
    model, x, y = mlp_and_data(hidden)
    if optimizer_name == "SGD":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    else:  # Keras's defaults but the learning rate; foreach (multi-tensor) is PyTorch's default on CUDA
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.9, 0.999), eps=1e-7)
    loss_fn = torch.nn.MSELoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        # Autocast: the Linear layers in bfloat16 (float32 weights cast per step), the loss in float32.
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model(x).float(), y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()

    for _ in range(5):
        step()
    per_step = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        per_step.append((time.perf_counter() - start) / steps * 1e6)
    kind = "MlpStepAutocastBf16" if autocast else "MlpStep"
    return result(f"torch_{kind}_{optimizer_name}/{hidden}", per_step)


def run_graph(hidden, steps, repetitions):
    """The same SGD step captured whole into one CUDA graph and replayed (PyTorch's CUDA-graph notes:
    static inputs, warm-up on a side stream, gradients kept allocated across replays). This is the
    reference for graph replay (issue 30), which devtensor does not have yet."""
    model, x, y = mlp_and_data(hidden)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.MSELoss()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(x), y)
        static_loss.backward()
        optimizer.step()
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    per_step = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(steps):
            graph.replay()
            torch.cuda.synchronize()
        per_step.append((time.perf_counter() - start) / steps * 1e6)
    assert torch.isfinite(static_loss).item()
    return result(f"torch_MlpStepGraph_SGD/{hidden}", per_step)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    for optimizer_name in ("SGD", "Adam"):
        for hidden in (256, 4096):
            print(json.dumps(run(hidden, optimizer_name, args.steps, args.repetitions)), flush=True)
    for hidden in (256, 4096):
        print(json.dumps(run_graph(hidden, args.steps, args.repetitions)), flush=True)
    for hidden in (256, 4096):
        print(json.dumps(run(hidden, "SGD", args.steps, args.repetitions, autocast=True)), flush=True)


if __name__ == "__main__":
    main()
