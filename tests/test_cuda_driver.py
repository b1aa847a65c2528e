"""The driver queries that choose configs before torch is imported: what they read from libcuda,
and the Hopper fallbacks where no driver answers (every CPU machine)."""

import pytest

from kernelscope.kernels.sm90 import device
from kernelscope.toolchain import cuda_driver


class _FakeDriver:
    """libcuda's four calls used here, answering like one GPU with 114 SMs (an H100 PCIe)."""

    def cuDeviceGetCount(self, count):
        count._obj.value = 1
        return 0

    def cuDeviceGet(self, dev, ordinal):
        dev._obj.value = ordinal
        return 0 if ordinal == 0 else 101            # CUDA_ERROR_INVALID_DEVICE

    def cuDeviceGetAttribute(self, value, attribute, dev):
        answers = {16: 114, 38: 50 * 1024 * 1024}
        if attribute not in answers:
            return 1
        value._obj.value = answers[attribute]
        return 0


@pytest.fixture
def driver(monkeypatch):
    def use(answer):
        monkeypatch.setattr(cuda_driver, "initialised_driver", lambda: answer)
        cuda_driver.device_attribute.cache_clear()
    yield use
    cuda_driver.device_attribute.cache_clear()


def test_a_driver_answers_count_and_attributes(driver):
    driver(_FakeDriver())
    assert cuda_driver.device_count() == 1
    assert cuda_driver.device_attribute(16) == 114
    assert cuda_driver.device_attribute(16, ordinal=1) is None
    assert device.sm_count() == 114                  # so a 114-SM part gets its own tile choice


@pytest.mark.parametrize("answer, count", [(None, None), (False, 0)])
def test_no_driver_or_no_device_falls_back_to_hopper(driver, answer, count):
    driver(answer)
    assert cuda_driver.device_count() == count
    assert cuda_driver.device_attribute(16) is None
    assert device.sm_count() == device.H100_SMS and device.l2_bytes() == device.H100_L2_BYTES
