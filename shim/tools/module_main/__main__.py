"""``python -m kafka_shim``: the kafka-shim command. setup.py installs this folder as the ``kafka_shim`` namespace's own
directory, so this file is ``kafka_shim/__main__.py`` in the wheel and in an editable install alike (the namespace
has no folder of its own in the checkout: the top-level folders are the design card's)."""

if __name__ == "__main__":
    import sys

    from kafka_shim.shim.tools.cli import main

    sys.exit(main())
