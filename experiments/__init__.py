"""Scripts that answer research questions with jaxzero (see docs/)."""
