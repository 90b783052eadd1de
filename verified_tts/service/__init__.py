"""The synthesis service: verified speech over HTTP on Ray Serve (``verified-tts serve``).

:mod:`~verified_tts.service.request` reads an OpenAI-shaped speech request (plus our own fields)
into a frozen :class:`~verified_tts.service.request.SpeechRequest`, naming the field of any
mistake (:mod:`~verified_tts.service.errors`); :mod:`~verified_tts.service.engine` speaks a batch
of them with one loaded synthesizer over one content-addressed store, and
:mod:`~verified_tts.service.batcher` collects concurrent requests into those batches;
:mod:`~verified_tts.service.formats` encodes the audio; :mod:`~verified_tts.service.app` holds the
Serve deployments and routes (jobs in :mod:`~verified_tts.service.jobs_routes`), and
:mod:`~verified_tts.service.launcher` starts Ray and Serve and says where the service answers.
"""
