"""Everything that runs RETURNN or torch to check a config: load a written config and construct its networks
(``returnn_check``), build a torch model and run its train or forward step (``torch_check``), and judge whether two
configs define the same model (``semantics``, ``torch_semantics``, ``training_semantics``). ``returnn_check`` and
``torch_check`` also run alone, as scripts in the Python a setup trains with, and so import nothing of this package."""
