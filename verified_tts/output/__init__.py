"""What a run leaves on disk: assembled audio, the manifest, the HTML reports, written atomically.

:mod:`~verified_tts.storage.atomic` is the one way files are written (a unique temporary file in the
same folder, then a rename), so a crash never leaves a half-written output and two writers never
collide; :mod:`~verified_tts.output.assembly` joins winners into chapter and book files,
:mod:`~verified_tts.output.manifest` holds the typed manifest records, and
:mod:`~verified_tts.output.report` and :mod:`~verified_tts.output.ab_report` write the
self-contained HTML pages (shared scaffolding in :mod:`~verified_tts.output.html`).
"""
