"""dpbounds: utility bounds, rate certificates and simulations for DP optimization."""

__version__ = "0.1.0"
