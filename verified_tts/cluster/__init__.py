"""The cluster side: the Ray execution backend, the local loopback head and their shared state.

:mod:`~verified_tts.cluster.state` is the leaf that the head, the backend and the job queue all
read (where the state lives, how to reach Ray); :mod:`~verified_tts.cluster.head` starts, stops and
inspects a local head; :mod:`~verified_tts.cluster.ray_backend` runs the generator and verifiers in
Ray actors behind the same protocols as the local pipeline. Nothing here imports Ray until used.
"""
