"""Epoch drivers, one module per method: logt (Algorithm 1), sgd, epoch_gd."""
