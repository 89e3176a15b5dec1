"""``xamm compare M@now M@accepted`` / ``xamm compare M --since DATE``: drift, and
``xamm accept NEW --against REF --criteria criteria.toml``: an acceptance certificate."""

from __future__ import annotations

import argparse
import json
import sys

from xamm_data.cli.tools import UsageError, path_arg, print_frame, store_arg

SHOWN = ("variant", "group", "kernel", "problem_size", "trials_before", "trials_after", "ratio",
         "lo", "hi", "verdict")  # fmt: skip
# in 100 columns (--wide: SHOWN): the ratio with its interval, the trials as before/after
NARROW = ("variant", "kernel", "problem_size", "trials", "ratio", "verdict")

ACCEPT_EPILOG = """\
Judges NEW against each REF by the criteria file (its JSON Schema: `xamm schemas export --dir
DIR` writes acceptance_criteria.schema.json),
writes certificate.md and certificate.json, and records the certificate under
$XAMM_HOME/certificates (a passing one becomes NEW@accepted for `xamm compare NEW@now
NEW@accepted`). Rerun after a system update: the new certificate judges the runs added since the
previous one and lists the verdicts that changed. Exit code 0 whether it passes or fails;
--strict exits 1 on a failed certificate.

Certificates are chained by hashes and checked on every read; `xamm accept verify MACHINE`
checks them all (exit 1 naming each file that was edited, deleted, reordered or does not belong).
A centre signs them with its own Ed25519 key (--sign-key; `openssl genpkey -algorithm ed25519
-out key.pem` and `openssl pkey -in key.pem -pubout -out key.pub` make a pair) and checks them
with --public-key.

examples:
  xamm-ingest rajaperf ./dane-accepted --machine dane   the runs judged first
  xamm accept dane --against quartz --criteria criteria.toml --out acceptance/
  xamm-ingest rajaperf ./dane-update --machine dane     after an update: the new runs
  xamm accept dane --against quartz --criteria criteria.toml --no-record --json
  xamm accept verify dane                               every certificate of dane, checked
"""


def _sides(args):
    from xamm_models.compare.history.states import drift_sides, resolve, split_by_date  # likewise

    # the command's own work: loaded when it runs
    from xamm_models.compare.runs.targets import target_runs

    if args.since is not None:
        if args.refs:
            raise UsageError("--since compares NEW with itself: name no reference")
        target, runs = target_runs(args.new, store=args.store)
        before, after = split_by_date(runs.collect(engine="in-memory"), args.since)
        return (
            target,
            (f"{target} before {args.since}", f"{target} since {args.since}"),
            before,
            after,
        )
    if len(args.refs) != 1:
        raise UsageError("drift compares two states of one target: NEW@STATE REF@STATE")
    old, rows_old, new, added = drift_sides(
        resolve(args.new, store=args.store), resolve(args.refs[0], store=args.store)
    )
    labels = (f"{old.label} (store v{old.version})", f"{new.label} (runs added by v{new.version})")
    return new.target, labels, rows_old, added


def run_drift(args) -> int:
    """The drift branch of ``xamm compare``."""
    # the command's own work: loaded when it runs
    from xamm_models.compare.history.drift import drift

    target, labels, before, after = _sides(args)
    d = drift(before, after, target=target, labels=labels, tolerance=args.tolerance)
    files = []
    if args.out is not None:
        # matplotlib: only --out
        from xamm_models.compare.history.drift_report import write_drift_report

        files = [str(p) for p in write_drift_report(d, args.out)]
    if args.json:
        print(json.dumps({**d.to_dict(), "files": files}, indent=1, default=str))
        return 0
    from xamm_data.cli.summary import say  # the printer: loaded when it prints

    say(f"{target}: {labels[1]} against {labels[0]}; flagged beyond {d.tolerance:.0%} and the "
        f"trials' spread ({d.level:.0%} family-wise intervals)", indent="")  # fmt: skip
    print_frame(d.groups, title="kernel groups: geometric-mean ratio after / before",
                wide=getattr(args, "wide", False))  # fmt: skip
    moved = d.kernels.filter(d.kernels["verdict"] != "same")
    if moved.height:
        _print_moved(moved, getattr(args, "wide", False))
    else:
        print("no kernel moved beyond the tolerance and the trials' spread")
    if d.unmatched.height:
        print(f"{d.unmatched.height} measurements on one side only (--json lists them)")
    for f in files:
        print(f"wrote {f}")
    return 0


def _print_verdicts(cert) -> None:
    """The certificate's results in 100 columns: relR with its interval in one column, the
    reference only when there are several, and each result's reason as a numbered note under the
    table (``--json`` and certificate.md hold every field)."""
    import polars as pl  # the command's own work: loaded when it runs

    from xamm_data.cli.summary import say, with_intervals  # the printer: loaded when it prints

    f = cert.frame()
    if f.is_empty():
        print_frame(f, title="verdicts per criterion, reference and kernel group")
        return
    notes = f.get_column("why").to_list()
    shown = with_intervals(f, {"relR": ("lo", "hi")}, digits=3).with_columns(
        pl.Series("why", [f"({i})" if w else "" for i, w in enumerate(notes, 1)], pl.String)
    )
    keep = ["criterion", "ref", "group", "kernels", "basis", "relR", "limit", "verdict",
            "certain", "why"]  # fmt: skip
    if len(cert.refs) == 1:
        keep.remove("ref")
    title = "verdicts per criterion, reference and kernel group: relR [90% interval]"
    table = shown.select(c for c in keep if c in shown.columns)
    print_frame(table.rename({"certain": "sure"}, strict=False), title=title)
    for i, w in enumerate(notes, 1):
        if w:
            say(f"({i}) {w}")


def _print_moved(moved, wide: bool) -> None:
    """The kernels that moved: every column with ``wide``, else what fits 100 columns."""
    title = "kernels that moved (--json lists every kernel)"
    if wide:
        print_frame(moved.select(SHOWN), title=title, wide=True)
        return
    import polars as pl  # the command's own work: loaded when it runs

    from xamm_data.cli.summary import with_intervals  # the printer: loaded when it prints

    shown = with_intervals(moved.select(SHOWN), {"ratio": ("lo", "hi")}).with_columns(
        pl.format("{}/{}", "trials_before", "trials_after").alias("trials")
    )
    print_frame(shown.select(NARROW), title=f"{title}: ratio [90% interval], trials before/after")


def add_accept(sub) -> None:
    """Add ``accept`` (and ``accept verify``) to ``xamm``."""
    s = sub.add_parser(
        "accept",
        help="judge a machine against references by a centre's criteria; write a certificate "
        "(accept verify MACHINE: check its certificates)",
        usage="xamm accept NEW --against REF [REF ...] --criteria FILE [options]\n"
        "       xamm accept verify MACHINE [--public-key FILE] [--json]",
        epilog=ACCEPT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("new", help="the machine accepted: MACHINE or MACHINE:DEVICE (or verify)")
    s.add_argument("machine", nargs="?", help=argparse.SUPPRESS)  # accept verify MACHINE
    s.add_argument("--against", nargs="+", metavar="REF", help="references")
    s.add_argument("--criteria", type=path_arg, help="criteria.toml")
    s.add_argument("--family", help="variant family (default: the first every target ran)")
    s.add_argument("--out", type=path_arg, help="write certificate.md and certificate.json here")
    s.add_argument("--no-record", action="store_true", help="do not register the certificate")
    s.add_argument("--strict", action="store_true", help="exit 1 when the certificate fails")
    s.add_argument(
        "--sign-key", type=path_arg, help="sign the certificate with this Ed25519 key (PEM)"
    )
    s.add_argument(
        "--public-key",
        type=path_arg,
        help="accept verify: each certificate must be signed by this key (PEM)",
    )
    s.add_argument("--store", type=store_arg, default=None, help="store (default $XAMM_HOME/store)")
    s.add_argument("--json", action="store_true", help="print the certificate as JSON")
    s.set_defaults(handler=run_accept)


def run_verify(args) -> int:
    """``xamm accept verify MACHINE``: every certificate checked; exit 1 on any problem."""
    # the command's own work: loaded when it runs
    from xamm_models.compare.certificates.evidence import load_public_key  # as above
    from xamm_models.compare.certificates.records import CertificateRegistry  # as above

    if args.machine is None:
        raise UsageError("accept verify needs the machine whose certificates to check")
    key = load_public_key(args.public_key) if args.public_key else None
    report = CertificateRegistry.default().verify(args.machine, public_key=key)
    problems = [str(p) for p in report.problems]
    if args.json:
        print(json.dumps({"machine": args.machine, "verified": sorted(report.good),
                          "head": report.head, "problems": problems}, indent=1))  # fmt: skip
    else:
        signed = " and signed by the key given" if key is not None else ""
        print(
            f"{args.machine}: {len(report.good)} certificate(s) verified{signed} "
            f"({', '.join(map(str, sorted(report.good))) or 'none'}); head {report.head}"
        )
        for p in problems:
            print(f"  problem: {p}")
    if problems:
        print(
            f"xamm accept verify: {len(problems)} problem(s) in {args.machine}'s certificates",
            file=sys.stderr,
        )
        return 1
    return 0


def run_accept(args) -> int:
    """The ``accept`` handler."""
    if args.new == "verify":
        return run_verify(args)
    # the command's own work: loaded when it runs
    from xamm_models.compare.certificates.acceptance import accept, write_certificate
    from xamm_models.compare.certificates.evidence import load_private_key  # likewise

    if args.machine is not None or not args.against or args.criteria is None:
        raise UsageError("accept NEW --against REF [REF ...] --criteria FILE")
    if not args.criteria.is_file():
        raise FileNotFoundError(f"no criteria file {args.criteria}")
    key = load_private_key(args.sign_key) if args.sign_key else None
    cert = accept(
        args.new, args.against, args.criteria, store=args.store, family=args.family,
        record=not args.no_record, sign_key=key,
    )  # fmt: skip
    files = [str(p) for p in write_certificate(cert, args.out)] if args.out else []
    if args.json:
        print(json.dumps({**cert.model_dump(mode="json"), "files": files}, indent=1))
    else:
        number = f" no. {cert.number}" if cert.number else " (not recorded)"
        print(f"{cert.new}: {cert.verdict.upper()} (certificate{number}) against "
              f"{', '.join(cert.refs)} by \"{cert.criteria.name}\"")  # fmt: skip
        _print_verdicts(cert)
        for line in cert.changed:
            print(f"  changed: {line}")
        for f in files:
            print(f"wrote {f}")
    if args.strict and cert.verdict == "fail":
        print("xamm accept: the certificate failed (--strict)", file=sys.stderr)
        return 1
    return 0
