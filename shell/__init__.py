"""toolreel.shell: the effect interpreter and the public APIs."""
