"""``torch.distributed.elastic.multiprocessing``: of TorchElastic's process management, ember
has the error files (``errors``); its launcher starts the processes itself."""
