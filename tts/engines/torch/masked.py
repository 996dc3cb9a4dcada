"""hexgrad's decoder (`kokoro.istftnet.Decoder.forward`) over a batch of windows of different lengths,
each padded to the batch's length and its padding masked, so that every window's audio is what it would
be decoded alone (tests/tts/engines/torch/test_batch.py: within 2e-4 of full scale, float rounding).

Padding enters a forward pass in four places, and each is closed here:
- Instance norms (AdaIN) take their mean and variance over the valid positions only.
- Convolutions read zeros past a window's end, as they do at the end of a window alone: every
  convolution's input is multiplied by the window's mask at its time resolution (frames, F0 steps,
  the generator's two upsampled rates, STFT frames), where an earlier bias or norm made it non-zero.
- The harmonic source's STFT pads a window by reflection (torch.stft's `center`): past a padded window's
  end its source is replaced by that reflection, so its last STFT frames see what they see alone; its
  phase stops growing past the end (F0 is zero there), as linear interpolation's clamp does alone.
- The iSTFT divides by the squared window summed over the frames that exist: here over the window's
  own frames (`_istft`), not the batch's.
And one place where rounding alone would differ: the source's STFT phase at its branch cut
(BRANCH_CUT).

Two more changes from kokoro's forward, both to make a window's audio a function of the window alone:
- The harmonic source starts at the phase the frames before the window left it (`Batch.phase`, from
  `decode.py`'s `phase_before`), instead of a random initial phase on the overtones.
- Its Gaussian noise (0.003 in voiced, 0.033 in unvoiced samples: kokoro's `SineGen`) is drawn from a
  counter-based hash of the sample's position in its segment, not from torch's generator: the same
  noise whether a window is decoded alone or in a batch, on the CPU or on a GPU, and wherever two
  windows overlap (their context). The torch engine is therefore deterministic, as the ONNX export is.

Every tensor operation is on the device and depends on no value read back to the host, so a batch's
forward pass can be captured as a CUDA graph for its shape (`graphs.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tts.engines.decode import HARMONICS, SOURCE_UPSAMPLE

# The generator's rates, per aligned frame: F0 steps (2), after its first upsampling (20), after its
# second and the reflection pad (120, plus one STFT frame), audio samples (600). Fixed by the model's
# config (upsample rates 10 and 6, iSTFT hop 5).
F0_STEPS = 2
FIRST_UP = 20
SECOND_UP = 120
_HASH = 0x45D9F3B  # a 32-bit multiplicative hash's constant (small enough that int64 never overflows)
_WORD = 0xFFFFFFFF
_SALT = 0x68E31DA4  # the second uniform of a Box-Muller pair: the first one's hash, salted
_SQRT_HALF = math.sqrt(0.5)
# The source's STFT phase (torch.angle) jumps from pi to -pi where a bin's imaginary part crosses zero
# with its real part negative, and float rounding decides the side: one such bin read -pi alone and pi
# in a batch of two, and moved the audio by 0.07 (random weights; 3e-4 with the real ones). Angles
# within BRANCH_CUT above -pi are read as their equal just above pi, so rounding no longer decides
# (it changes the input of one bin in about 600,000, by the 2 pi the jump was anyway).
BRANCH_CUT = 1e-5  # kokoro's residual blocks scale their sum by rsqrt(2)


@dataclass(frozen=True)
class Batch:
    """Windows padded to `asr.shape[-1]` frames: `frames` valid of each ([B] int64, on the device),
    the features of their frames (zeros past them), each one's style (decoder half, [B, 128]), the
    harmonic source's phase before its first frame ([B, 9]) and its first sample's position in its
    segment ([B] int64, the noise's counter). `padded` says whether any window is shorter than the
    batch (False: the masks are skipped, the arithmetic is the same)."""

    asr: torch.Tensor  # [B, 512, T]
    f0: torch.Tensor  # [B, 2T]
    energy: torch.Tensor  # [B, 2T]
    style: torch.Tensor  # [B, 128]
    frames: torch.Tensor  # [B] int64
    phase: torch.Tensor  # [B, 9] float32
    first_sample: torch.Tensor  # [B] int64
    padded: bool = True


class _Masks:
    """The valid positions of each window at each of the decoder's time resolutions."""

    def __init__(self, frames: torch.Tensor, length: int, padded: bool) -> None:
        self.frames, self.length, self.padded = frames, length, padded
        self._made: dict[tuple[int, int], tuple[torch.Tensor | None, torch.Tensor]] = {}

    def at(self, rate: int, extra: int = 0) -> tuple[torch.Tensor | None, torch.Tensor]:
        """(mask [B, 1, N] or None when nothing is padded, valid count [B, 1, 1]) at `rate` positions
        per frame (`extra` more: the STFT's last frame)."""
        if (rate, extra) not in self._made:
            valid = (self.frames * rate + extra).reshape(-1, 1, 1)
            size = self.length * rate + extra
            if self.padded:
                positions = torch.arange(size, device=valid.device).reshape(1, 1, -1)
                self._made[rate, extra] = (positions < valid).float(), valid.float()
            else:
                self._made[rate, extra] = None, torch.full_like(valid, size, dtype=torch.float32)
        return self._made[rate, extra]


def _masked(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return x if mask is None else x * mask


def _adain(module, x: torch.Tensor, s: torch.Tensor, mask, count) -> torch.Tensor:
    """kokoro's AdaIN1d with its instance norm over the valid positions."""
    h = module.fc(s).unsqueeze(-1)
    gamma, beta = torch.chunk(h, chunks=2, dim=1)
    norm = module.norm
    mean = _masked(x, mask).sum(-1, keepdim=True) / count
    centred = _masked(x - mean, mask)
    var = (centred * centred).sum(-1, keepdim=True) / count
    y = centred * torch.rsqrt(var + norm.eps)
    if norm.affine:
        y = y * norm.weight.reshape(1, -1, 1) + norm.bias.reshape(1, -1, 1)
    return _masked((1 + gamma) * y + beta, mask)


def _adain_resblk(block, x: torch.Tensor, s: torch.Tensor, masks: _Masks, rate: int) -> torch.Tensor:
    """kokoro's AdainResBlk1d (the decoder's encode and decode blocks); `rate` is its input's."""
    upsample = block.upsample_type != "none"
    out_rate = rate * 2 if upsample else rate
    mask_in, count_in = masks.at(rate)
    mask_out, count_out = masks.at(out_rate)
    r = block.actv(_adain(block.norm1, x, s, mask_in, count_in))
    if upsample:
        r = _masked(block.pool(r), mask_out)
    r = block.conv1(r)
    r = block.actv(_adain(block.norm2, r, s, mask_out, count_out))
    r = block.conv2(r)
    shortcut = block.upsample(x)
    if block.learned_sc:
        shortcut = block.conv1x1(shortcut)
    return _masked((r + shortcut) * _SQRT_HALF, mask_out)


def _resblock(block, x: torch.Tensor, s: torch.Tensor, mask, count) -> torch.Tensor:
    """kokoro's AdaINResBlock1 (the generator's), Snake activations and all."""
    for c1, c2, n1, n2, a1, a2 in zip(
        block.convs1, block.convs2, block.adain1, block.adain2, block.alpha1, block.alpha2, strict=True
    ):
        xt = _adain(n1, x, s, mask, count)
        xt = c1(xt + (1 / a1) * (torch.sin(a1 * xt) ** 2))
        xt = _adain(n2, xt, s, mask, count)
        xt = c2(xt + (1 / a2) * (torch.sin(a2 * xt) ** 2))
        x = _masked(xt + x, mask)
    return x


def _hash32(x: torch.Tensor) -> torch.Tensor:
    x = (((x >> 16) ^ x) * _HASH) & _WORD
    x = (((x >> 16) ^ x) * _HASH) & _WORD
    return (x >> 16) ^ x


def source_noise(first_sample: torch.Tensor, samples: int) -> torch.Tensor:
    """[B, samples, HARMONICS] standard Gaussian noise, a function of each sample's position in its
    segment (`first_sample` [B] + its index) and harmonic alone (Box-Muller on two hashed uniforms)."""
    device = first_sample.device
    position = first_sample.reshape(-1, 1, 1) + torch.arange(samples, device=device).reshape(1, -1, 1)
    keys = (position * HARMONICS + torch.arange(HARMONICS, device=device)) & _WORD
    first = _hash32(keys)
    second = _hash32(first ^ _SALT)
    u1 = (first.float() + 1.0) / 4294967296.0
    u2 = second.float() / 4294967296.0
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2 * math.pi * u2)


def _harmonic_source(generator, f0_curve: torch.Tensor, batch: Batch) -> torch.Tensor:
    """kokoro's SourceModuleHnNSF on the upsampled F0, [B, samples]: the sine generator's phase carried
    in from `batch.phase`, its noise from `source_noise`."""
    sine_gen = generator.m_source.l_sin_gen
    scale = sine_gen.upsample_scale
    f0 = generator.f0_upsamp(f0_curve[:, None]).transpose(1, 2)  # [B, samples, 1]
    harmonics = torch.arange(1, HARMONICS + 1, device=f0.device, dtype=f0.dtype)
    steps = (f0 * harmonics / sine_gen.sampling_rate) % 1
    steps = F.interpolate(steps.transpose(1, 2), scale_factor=1 / scale, mode="linear")
    phase = torch.cumsum(steps, dim=2) + batch.phase.unsqueeze(-1)
    phase = F.interpolate(phase * scale * 2 * torch.pi, scale_factor=scale, mode="linear")
    sines = torch.sin(phase.transpose(1, 2)) * sine_gen.sine_amp
    uv = (f0 > sine_gen.voiced_threshold).float()
    noise_amp = uv * sine_gen.noise_std + (1 - uv) * sine_gen.sine_amp / 3
    waves = sines * uv + noise_amp * source_noise(batch.first_sample, f0.shape[1])
    m_source = generator.m_source
    return m_source.l_tanh(m_source.l_linear(waves)).squeeze(-1)


def _reflected_past_end(source: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Each window's source past its end replaced by its reflection (what torch.stft's `center` pads a
    window with when it is decoded alone; only its first n_fft / 2 samples reach a valid STFT frame)."""
    if not batch.padded:
        return source
    end = (batch.frames * SOURCE_UPSAMPLE * F0_STEPS).reshape(-1, 1)
    index = torch.arange(source.shape[1], device=source.device).reshape(1, -1)
    reflected = torch.where(index < end, index, (2 * end - 2 - index).clamp(min=0))
    return torch.gather(source, 1, reflected)


def _istft(spec: torch.Tensor, phase: torch.Tensor, mask, window: torch.Tensor, hop: int) -> torch.Tensor:
    """torch.istft (centred, one-sided) whose squared-window envelope counts only each window's own
    STFT frames: [B, hop * (frames - 1)]."""
    n_fft = window.shape[0]
    frames = torch.fft.irfft(spec * torch.exp(phase * 1j), n=n_fft, dim=1) * window.reshape(1, -1, 1)
    squared = (window * window).reshape(1, -1, 1).expand(frames.shape[0], -1, frames.shape[2])
    if mask is not None:
        frames, squared = frames * mask, squared * mask
    length = n_fft + hop * (frames.shape[2] - 1)
    fold = {"output_size": (1, length), "kernel_size": (1, n_fft), "stride": (1, hop)}
    audio = F.fold(frames, **fold).reshape(frames.shape[0], -1)
    envelope = F.fold(squared.contiguous(), **fold).reshape(frames.shape[0], -1)
    audio = audio / torch.where(envelope > 1e-11, envelope, torch.ones_like(envelope))
    return audio[:, n_fft // 2 : length - n_fft // 2]


def _generator(generator, x: torch.Tensor, s: torch.Tensor, batch: Batch, masks: _Masks) -> torch.Tensor:
    """kokoro's Generator.forward, masked: [B, 512, 2T] decoder features -> [B, 600T] audio."""
    stft = generator.stft
    spec, phase = stft.transform(_reflected_past_end(_harmonic_source(generator, batch.f0, batch), batch))
    phase = torch.where(phase < BRANCH_CUT - torch.pi, phase + 2 * torch.pi, phase)
    stft_mask, _ = masks.at(SECOND_UP, 1)
    har = _masked(torch.cat([spec, phase], dim=1), stft_mask)
    rates = (FIRST_UP, SECOND_UP)
    for i in range(generator.num_upsamples):
        mask, count = masks.at(rates[i], 1 if i == generator.num_upsamples - 1 else 0)
        x = F.leaky_relu(x, negative_slope=0.1)
        x_source = _resblock(generator.noise_res[i], generator.noise_convs[i](har), s, mask, count)
        x = generator.ups[i](x)
        if i == generator.num_upsamples - 1:
            x = generator.reflection_pad(x)
        x = x + x_source
        blocks = generator.resblocks[i * generator.num_kernels : (i + 1) * generator.num_kernels]
        x = sum(_resblock(block, x, s, mask, count) for block in blocks) / generator.num_kernels
    x = generator.conv_post(F.leaky_relu(x))
    spec = torch.exp(x[:, : generator.post_n_fft // 2 + 1, :])
    phase = torch.sin(x[:, generator.post_n_fft // 2 + 1 :, :])
    window = stft.window.to(x.device)
    return _istft(spec, phase, stft_mask, window, stft.hop_length)


def decode(decoder, batch: Batch) -> torch.Tensor:
    """kokoro's Decoder.forward over `batch`: [B, 600T] audio, each window's valid where it is."""
    length = batch.asr.shape[-1]
    masks = _Masks(batch.frames, length, batch.padded)
    s = batch.style
    frame_mask, _ = masks.at(1)
    f0 = _masked(decoder.F0_conv(batch.f0.unsqueeze(1)), frame_mask)
    energy = _masked(decoder.N_conv(batch.energy.unsqueeze(1)), frame_mask)
    x = _adain_resblk(decoder.encode, torch.cat([batch.asr, f0, energy], dim=1), s, masks, 1)
    asr_res = _masked(decoder.asr_res(batch.asr), frame_mask)
    rate = 1
    for block in decoder.decode:
        if rate == 1:
            x = torch.cat([x, asr_res, f0, energy], dim=1)
        x = _adain_resblk(block, x, s, masks, rate)
        if block.upsample_type != "none":
            rate = F0_STEPS
    return _generator(decoder.generator, x, s, batch, masks)
