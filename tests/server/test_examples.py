"""The files in examples/ (which the docs include or name) do what the docs say they do: the first call's request,
the worked example's numbers (derived by hand in docs/concepts/pipeline.md), the custom-profile config, the sidecar
Helm values and the Python programs, run against a live server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memrank.config import load_settings
from tests.support.helm import run_helm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def rank(name: str, *args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "memrank.cli", "rank", *args, str(EXAMPLES / name)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_the_quick_start_request_keeps_the_preference_and_drops_the_remark() -> None:
    resp = rank("request.json")
    assert [m["id"] for m in resp["selected"]] == ["m1"]
    assert [(d["id"], d["reason"]) for d in resp["dropped"]] == [("m2", "DROP_REASON_ZERO_IMPORTANCE")]


def test_the_worked_example_gives_the_readmes_hand_derived_numbers() -> None:
    resp = rank("worked-example.json")
    got = {m["id"]: m for m in resp["selected"]}
    # docs/concepts/pipeline.md, "A breakdown, worked by hand": m1 combined 0.7793, final 0.7403, score 0.8461;
    # m2 0.1321, 0.1195, 0.0978 (seven signals constant: their weight shared by relevance, lexical and
    # importance, 0.338 between them; lambda 0.95)
    for cid, combined, final, score in (("m1", 0.7793, 0.7403, 0.8461), ("m2", 0.1321, 0.1195, 0.0978)):
        b = got[cid]["breakdown"]
        assert (round(b["combinedScore"], 4), round(b["finalScore"], 4), round(got[cid]["score"], 4)) == \
            (combined, final, score), cid
    assert [(d["id"], d["reason"]) for d in resp["dropped"]] == [("m3", "DROP_REASON_ZERO_IMPORTANCE")]


def test_the_custom_profile_config_loads_and_keeps_the_rest_of_its_base() -> None:
    settings = load_settings(str(EXAMPLES / "custom-profile.yaml"), env={})
    mine, base = settings.profiles["my-support"], settings.profiles["support"]
    assert mine.min_score == 0.25
    assert [(s.name, s.weight) for s in mine.signals] == [("relevance", 0.45), ("recency", 0.35), ("importance", 0.2)]
    assert mine.recency == base.recency and mine.kind_prior == base.kind_prior
    assert settings.server.workers == 2 and settings.limits.max_candidates == 800
    req = json.loads((EXAMPLES / "worked-example.json").read_text()) | {"profile": "my-support"}
    config = str(EXAMPLES / "custom-profile.yaml")
    out = subprocess.run([sys.executable, "-m", "memrank.cli", "rank", "--config", config, "-"],
                         input=json.dumps(req), capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["profile"] == "my-support"


def test_the_sidecar_values_render_a_loopback_sidecar_with_the_decision_log(helm: str) -> None:
    proc = run_helm(helm, "template", "agent", str(ROOT / "helm" / "memrank"), "--kube-version", "1.31.0",
                    "-f", str(EXAMPLES / "helm-sidecar-values.yaml"))
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    memrank = [c for c in spec.get("initContainers", []) + spec["containers"]
               if any(p["name"] == "memrank-grpc" for p in c.get("ports", []))]
    assert len(memrank) == 1 and memrank[0]["image"].startswith("REGISTRY/memrank:")
    env = {e["name"]: e.get("value") for e in memrank[0]["env"]}
    assert env["MEMRANK_ADDRESS"].startswith("127.0.0.1:")
    config = next(d for d in docs if d["kind"] == "ConfigMap" and "memrank.yaml" in d.get("data", {}))
    assert yaml.safe_load(config["data"]["memrank.yaml"])["decision_log"] == {"enabled": True, "sample_rate": 0.1}


@pytest.fixture(scope="module")
def helm() -> str:
    import shutil

    from tests.support.helm import missing

    path = shutil.which("helm") or str(Path.home() / "go" / "bin" / "helm")
    if not Path(path).exists():
        missing("helm")
    return path


@pytest.mark.parametrize("program", sorted(p.name for p in (EXAMPLES / "python").glob("*.py")))
def test_the_python_programs_run_against_a_live_server(program: str, capsys: pytest.CaptureFixture[str]) -> None:
    from memrank.grpc.server import create_server
    from tests.support.servers import loopback_settings

    path = EXAMPLES / "python" / program
    code = path.read_text(encoding="utf-8")
    assert "localhost:50051" in code
    running = create_server(loopback_settings())
    try:  # the program as written, pointed at this server
        exec(compile(code.replace("localhost:50051", f"127.0.0.1:{running.port}"), str(path), "exec"),
             {"__name__": "__main__"})
    finally:
        running.stop(0)
    lines = capsys.readouterr().out.splitlines()
    assert lines and lines[0].startswith("1 m1 ")  # rank 1, the preference, with its signal contributions
    assert all("DROP_REASON_" in line for line in lines[1:])


def test_rank_prints_json_names_by_default_and_proto_names_on_request() -> None:
    camel, snake = rank("request.json"), rank("request.json", "--proto-names")
    assert "finalScore" in camel["selected"][0]["breakdown"] and "requestId" not in json.dumps(snake)
    assert "final_score" in snake["selected"][0]["breakdown"] and "scoring_schema" in snake


def test_a_closed_pipe_ends_a_command_quietly() -> None:
    big = {"query": "tea", "explain": "EXPLAIN_LEVEL_FULL",  # ~1 MB of JSON out: far past the 64 KiB pipe buffer
           "candidates": [{"id": f"m{i}", "content": f"memory {i} about tea and coffee", "retrievalScore": 0.5}
                          for i in range(400)]}
    proc = subprocess.Popen([sys.executable, "-m", "memrank.cli", "rank", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(big).encode())
    proc.stdin.close()
    proc.stdout.read(10)
    proc.stdout.close()  # like `memrank rank big.json | head -c 10`
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(60)
    assert "Broken pipe" not in err and "BrokenPipeError" not in err and "Traceback" not in err, err


def test_the_readmes_python_is_an_example_program() -> None:
    """The README cannot include files, so its Python is a copy: each python block must be, verbatim, part of a
    program under examples/ that the test above runs. Only code blocks are read, never the prose."""
    import re

    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M)
    programs = {p: p.read_text(encoding="utf-8") for p in (EXAMPLES / "python").glob("*.py")}
    assert blocks
    for block in blocks:
        assert any(block in text for text in programs.values()), block
