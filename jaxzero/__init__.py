"""jaxzero: AlphaZero machinery over the `envs` API."""
