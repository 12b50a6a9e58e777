//! What a candle program does with cute-copy: its tensors' memory is cudarc's, on its own stream,
//! and cute-copy copies between layouts of it without a host copy.

use cute_copy::{DeviceTensor, Layout};

/// `y = x.permute(0, 2, 1, 3).contiguous()` for an f16 `[b, h, s, d]` tensor, on `stream`.
pub fn heads_to_tokens(
    x: &DeviceTensor<half::f16>,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
) -> Result<DeviceTensor<half::f16>, cute_copy::Error> {
    let layout = x.layout();
    let shape = layout.shape();
    let (b, h, s, d) = (shape[0], shape[1], shape[2], shape[3]);
    let mut y = DeviceTensor::zeros(stream, Layout::row_major(&[b, s, h, d])?)?;
    cute_copy::copy_tensor(&x.view().permute(&[0, 2, 1, 3])?, &mut y.view_mut(), stream)?;
    Ok(y)
}
