//! Failed driver calls ([`CuFail`]) and what they mean: a kernel fault (sticky, reported
//! late), out of memory, a refused launch configuration, or another driver error; and how
//! each becomes an [`Error`].

use cudarc::driver::result::DriverError;
use cudarc::driver::sys;

use crate::error::{DriverStatus, Error};

/// A failed driver call, before it becomes an [`Error`].
/// A failed driver call, before it becomes an [`Error`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CuFail {
    pub(crate) call: &'static str,
    pub(crate) err: DriverError,
}

pub(super) fn fail(call: &'static str) -> impl FnOnce(DriverError) -> CuFail {
    move |err| CuFail { call, err }
}

impl CuFail {
    fn code_and_message(&self) -> (String, String) {
        let code = self
            .err
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", self.err.0));
        let message = self
            .err
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "(no description from the driver)".to_owned());
        (code, message)
    }

    /// The driver's status code.
    pub(crate) fn status(&self) -> DriverStatus {
        DriverStatus(self.err.0 as u32)
    }

    /// Whether the error is one the GPU reports after a kernel went wrong; it is sticky: the
    /// context cannot be used afterwards.
    pub(crate) fn is_fault(&self) -> bool {
        use sys::CUresult as R;
        matches!(
            self.err.0,
            R::CUDA_ERROR_ILLEGAL_ADDRESS
                | R::CUDA_ERROR_LAUNCH_TIMEOUT
                | R::CUDA_ERROR_HARDWARE_STACK_ERROR
                | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
                | R::CUDA_ERROR_MISALIGNED_ADDRESS
                | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
                | R::CUDA_ERROR_INVALID_PC
                | R::CUDA_ERROR_LAUNCH_FAILED
                | R::CUDA_ERROR_ASSERT
                | R::CUDA_ERROR_ECC_UNCORRECTABLE
        )
    }

    pub(crate) fn is_out_of_memory(&self) -> bool {
        self.err.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
    }

    /// Whether the driver refused a launch because of its configuration.
    pub(crate) fn is_bad_launch_config(&self) -> bool {
        use sys::CUresult as R;
        matches!(
            self.err.0,
            R::CUDA_ERROR_INVALID_VALUE | R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        )
    }

    /// The driver's description, e.g. `CUDA_ERROR_INVALID_VALUE: invalid argument`.
    pub(crate) fn describe(&self) -> String {
        let (code, message) = self.code_and_message();
        format!("{code}: {message} (from {})", self.call)
    }

    /// The error for the user; `last_kernel` is named when this is a kernel fault.
    pub(crate) fn into_error(self, last_kernel: Option<&str>) -> Error {
        let (code, message) = self.code_and_message();
        if self.is_fault() {
            Error::KernelFault {
                status: self.status(),
                kernel: last_kernel
                    .unwrap_or("<unknown: no kernel launched yet>")
                    .to_owned(),
                detail: format!(
                    "{code}: {message} (reported by {}). A device-side check failed (a bounds \
                     check, an assertion, an integer division by zero or with overflow) or the \
                     kernel accessed invalid memory. The CUDA context is now unusable: every \
                     later GPU call in this process fails; restart the process. Running the \
                     same code with CUPRUM_DEVICE=emu names the check, its expression and line, \
                     the block and the thread.",
                    self.call
                ),
            }
        } else {
            Error::Driver {
                call: self.call,
                status: self.status(),
                code,
                message,
            }
        }
    }
}

pub(super) fn driver_error(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |err| CuFail { call, err }.into_error(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_is_the_drivers_cuda_result_number() {
        // The numbers of cuda.h, which users match on through `DriverStatus`.
        let failure = CuFail {
            call: "cuMemAlloc",
            err: DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY),
        };
        assert_eq!(failure.status(), DriverStatus::OUT_OF_MEMORY);
        assert_eq!(DriverStatus::OUT_OF_MEMORY, DriverStatus(2));
        assert_eq!(DriverStatus::INVALID_VALUE, DriverStatus(1));
        assert_eq!(DriverStatus::NO_DEVICE, DriverStatus(100));
        assert_eq!(DriverStatus::ILLEGAL_ADDRESS, DriverStatus(700));
        assert_eq!(DriverStatus::NOT_SUPPORTED, DriverStatus(801));
        assert!(failure.is_out_of_memory() && !failure.is_fault());
    }
}
