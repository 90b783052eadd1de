"""What a queued job runs: ``python -m jobs.entrypoint spec.json`` inside its working dir.

Ray starts this with the submitter's interpreter (the spec's ``python``, by absolute path, since
a job gets the cluster's PATH) in the uploaded working dir that holds ``spec.json`` and
``input/``. It refuses a different verified-tts version than the submitter's, prints what it is
about to do, and then runs the ordinary CLI (``verified-tts render|dub input/FILE --out OUT
--ray auto``) in this process, so a job is exactly a command-line run on the Ray backend and
resumes from the store in ``OUT`` like one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from jobs.spec import SPEC_FILE, JobSpec

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    from verified_tts import __version__
    from verified_tts.cli import main as cli_main

    args = list(sys.argv[1:] if argv is None else argv)
    spec = JobSpec.read(args[0] if args else SPEC_FILE)
    job = os.environ.get("VERIFIED_TTS_JOB_ID", spec.job_id)
    if spec.version != __version__:
        print(
            f"error: job {job} was submitted with verified-tts {spec.version}, but this "
            f"interpreter ({sys.executable}) has {__version__}: install the same version on the "
            "cluster or submit from this one",
            file=sys.stderr,
        )
        sys.exit(2)
    command = ["verified-tts", *spec.argv()]
    print(
        f"job {job}: {' '.join(command)} (python {sys.executable}, verified-tts {__version__}, "
        f"cwd {os.getcwd()})",
        flush=True,
    )
    sys.argv = command
    cli_main()


if __name__ == "__main__":
    main()
