"""Entry point of the example setup: ``sis manager`` without config arguments calls ``config.main()``."""


def main():
    from . import ctc_conformer, task12ax, task12ax_rf

    task12ax.run()
    task12ax_rf.run()
    ctc_conformer.run()
