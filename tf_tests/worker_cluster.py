"""Runs a command as the workers of a `TF_CONFIG` cluster on this machine,
for the tests of `tf.distribute.MultiWorkerMirroredStrategy`."""

import json
import os
import socket
import subprocess


def free_local_ports(count):
    """`count` ports of localhost that were free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run_workers(command_of_worker, cwd, workers=2, timeout=900):
    """Runs `command_of_worker(index)` (an argument list) for every worker
    index at once, each with the `TF_CONFIG` of its task in a cluster of
    `workers` on localhost; returns their `subprocess.CompletedProcess`es."""
    addresses = [f"localhost:{port}" for port in free_local_ports(workers)]
    processes = []
    try:
        for index in range(workers):
            config = {"cluster": {"worker": addresses},
                      "task": {"type": "worker", "index": index}}
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_CONFIG=json.dumps(config))
            processes.append(subprocess.Popen(
                command_of_worker(index), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, cwd=cwd, env=env))
        done = []
        for process in processes:
            stdout, stderr = process.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(process.args, process.returncode,
                                                    stdout, stderr))
        return done
    finally:
        for process in processes:
            process.kill()
