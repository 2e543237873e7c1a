"""Random number generation state: ``Generator``, ``manual_seed``, ``get/set_rng_state``."""
__all__ = []
