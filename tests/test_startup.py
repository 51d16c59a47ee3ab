"""What importing shiftvit_lib does outside the package (shiftvit_lib/_startup.py)."""


def test_a_colab_tpu_runtime_gets_the_jax_backend():
    from shiftvit_lib._startup import choose_backend_for_colab_tpu

    colab = {"google.colab": object()}
    tpu_vm = {"/dev/accel0"}.__contains__
    environ = {}
    note = choose_backend_for_colab_tpu(environ, colab, tpu_vm)
    assert environ["KERAS_BACKEND"] == "jax" and "JAX" in note and "\n" not in note
    assert choose_backend_for_colab_tpu({"COLAB_TPU_ADDR": "10.0.0.2:8470"}, colab, lambda path: False)
    # A backend the learner chose wins; a GPU or CPU runtime, or a TPU machine off Colab, is left alone.
    chosen = {"KERAS_BACKEND": "tensorflow"}
    assert choose_backend_for_colab_tpu(chosen, colab, tpu_vm) is None and chosen["KERAS_BACKEND"] == "tensorflow"
    for environ, modules, exists in [({}, colab, lambda path: False), ({}, {}, tpu_vm)]:
        assert choose_backend_for_colab_tpu(environ, modules, exists) is None and "KERAS_BACKEND" not in environ
