"""``python -m verified_tts`` runs the command-line interface."""

from verified_tts.cli import main

main()
