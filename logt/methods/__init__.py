"""The methods, one module and one registry entry each.

``minimize(..., method="logt", options={...})`` looks a method up by name
(``"auto"``, the default, chooses between ``"logt"`` and ``"logt_acc"``);
``minimize(..., method=LogT(eta=..., M=..., B1=...))`` passes the object.
See :mod:`logt.methods._base` for the protocol.
"""
from logt.methods._base import REGISTRY, Method, Option, get_method, method_names, register
from logt.methods.logt import LogT
from logt.methods.sgd import SGD
from logt.methods.epoch_gd import EpochGD
from logt.methods.logt_acc import LogTAcc
from logt.methods.minibatch_sgd import MinibatchSGD
from logt.methods.one_projection_sgd import OneProjectionSGD
from logt.methods.frank_wolfe import FrankWolfe
from logt.methods.auto import Auto

__all__ = ["Method", "Option", "register", "get_method", "method_names", "REGISTRY",
           "Auto", "LogT", "SGD", "EpochGD", "LogTAcc", "MinibatchSGD", "OneProjectionSGD", "FrankWolfe"]
