"""The env the python overlay ships to every actor pod (the ConfigMap volley-env-code, mounted
on /envs, which is on PYTHONPATH): VOLLEY_ENV=my_env:make_env names this function. Replace it
with your own module (a function returning an env with Gymnasium's API, or a vector env), listed
under files: in kustomization.yaml. This one is volley's Python CartPole."""
from volley.envs.cartpole import make_env

__all__ = ["make_env"]
