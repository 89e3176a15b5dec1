"""``xamm report [STORE] --out DIR``: a centre's static site (:mod:`xamm_models.report`)."""

from __future__ import annotations

import json
import sys

from xamm_data.cli.tools import path_arg, store_arg
from xamm_models.cli.common import RAW

EPILOG = """\
The site opens from the filesystem (open DIR/index.html) or from `python -m http.server -d DIR`:
an index of the machines in the store with each device's newest signature, the newest
certificate and the drift since the acceptance; a page per machine with its signature's figures
over versions, the drift with its intervals, the kernels that moved and every certificate; a page
per certificate; and, with --profile, the profile's predicted time per target. DIR is replaced
whole when it holds an earlier report, and refused when it holds anything else.

examples:
  xamm report --out site/ --machine dane
  xamm report --out site/ --machine dane --profile lulesh.cali --json
"""


def add(sub) -> None:
    """Add ``report`` to ``xamm``."""
    s = sub.add_parser(
        "report",
        help="write a static site: machines, signatures over versions, drift, certificates",
        usage="xamm report [STORE] --out DIR [--machine M ...] [--profile FILE] [options]",
        epilog=EPILOG,
        formatter_class=RAW,
    )
    s.add_argument(
        "store",
        nargs="?",
        type=store_arg,
        default=None,
        help="the store (default $XAMM_HOME/store)",
    )
    s.add_argument("--out", type=path_arg, required=True, help="the site's folder")
    s.add_argument(
        "--machine",
        action="append",
        metavar="M",
        help="only this machine (repeat for more; default every machine in the store)",
    )
    s.add_argument("--profile", type=path_arg, help="predict this profile on every target")
    s.add_argument(
        "--source", metavar="M:D", help="where the profile was measured (default: its own machine)"
    )
    s.add_argument("--model", default="xamm/default", help="the predictor for --profile")
    s.add_argument(
        "--public-key",
        type=path_arg,
        metavar="FILE",
        help="the centre's Ed25519 public key (PEM): a certificate it did not sign is "
        "a problem, not shown",
    )
    s.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    s.add_argument("--json", action="store_true", help="print what was written as JSON")
    s.set_defaults(handler=run_report)


def run_report(args) -> int:
    """The ``report`` handler."""
    from xamm_models.report.site import build_site  # the command's own work: loaded when it runs

    if args.profile is not None and not args.profile.exists():
        raise FileNotFoundError(f"--profile {args.profile}: no such file or folder")
    quiet = args.no_progress or args.json

    def progress(line: str) -> None:
        if not quiet:
            print(f"xamm report: {line}", file=sys.stderr, flush=True)

    key = None
    if args.public_key is not None:
        # the sign extra (cryptography): only when a key is given
        from xamm_models.compare.certificates.evidence import load_public_key

        key = load_public_key(args.public_key)
    site = build_site(
        args.out,
        store=args.store,
        machines=args.machine,
        profile=args.profile,
        source=args.source,
        model=args.model,
        public_key=key,
        progress=progress,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "out": str(site.out),
                    "pages": site.data["pages"],
                    "figures": site.data["figures"],
                    "machines": [m["machine"] for m in site.data["machines"]],
                },
                indent=1,
            )
        )
        return 0
    print(f"wrote {len(site.pages)} pages and {len(site.figures)} figures to {site.out}")
    print(f"open {site.out / 'index.html'}")
    return 0
