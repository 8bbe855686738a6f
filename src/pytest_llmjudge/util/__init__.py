"""Small helpers every layer uses for what the plugin writes; none imports pytest or a feature package.

* ``atomic``: replace a file so that a reader sees the old one or the whole new one;
* ``escaping``: control characters made visible in text written to a terminal, HTML or XML;
* ``formatting``: numbers as text, the one way a score or threshold reads everywhere;
* ``redaction``: credentials masked in everything written.
"""
