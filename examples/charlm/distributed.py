"""Data-parallel training with torch.distributed: gloo processes on the loopback interface.

Either this script starts the processes itself (--ddp N: torch.multiprocessing.spawn, a free
TCP port on 127.0.0.1), or torchrun does (it sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
Each process runs training.run with its rank; DistributedDataParallel wraps the model built on
lstmop.nn.LSTM and all-reduces the gradients (see training.py for why the loss is scaled).
"""
import os
import socket

import torch.distributed as dist
import torch.multiprocessing as mp

LOOPBACK = "127.0.0.1"


def keep_on_loopback():
    """Gloo connects its processes through the interface of the host name's address, which
    may be a real network; GLOO_SOCKET_IFNAME=lo keeps all traffic on 127.0.0.1."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def spawn(function, world_size, *args):
    """Runs function(rank, world_size, port, *args) in world_size fresh processes."""
    keep_on_loopback()
    port = free_port()
    mp.spawn(_entry, args=(function, world_size, port, args), nprocs=world_size, join=True)


def _entry(rank, function, world_size, port, args):
    dist.init_process_group("gloo", init_method=f"tcp://{LOOPBACK}:{port}", rank=rank,
                            world_size=world_size)
    try:
        function(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def launched_by_torchrun():
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ and "MASTER_PORT" in os.environ


def run_under_torchrun(function, *args):
    """Joins the group torchrun set up (env://) and runs function(rank, world_size, *args)."""
    keep_on_loopback()
    dist.init_process_group("gloo", init_method="env://")
    try:
        function(dist.get_rank(), dist.get_world_size(), *args)
    finally:
        dist.destroy_process_group()
