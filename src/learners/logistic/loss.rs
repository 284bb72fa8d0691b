//! Per-example losses of linear classifiers on the margin m = y θ·x: the logistic loss and the
//! Huber SVM loss of Chaudhuri, Monteleoni & Sarwate (2011). Both have |ℓ'| ≤ 1, which is
//! what the sensitivity proofs of output perturbation, objective perturbation and DP-SGD's
//! clipping use; objective perturbation also needs ℓ'' ≤ c ([`Loss::curvature`]).

/// The per-example loss ℓ(m) of the margin m = y θ·x.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    /// ln(1 + e^{−m}).
    Logistic,
    /// Huber hinge with width h (Chaudhuri et al. 2011): 0 for m > 1 + h,
    /// (1 + h − m)²/(4h) for |1 − m| ≤ h, 1 − m for m < 1 − h.
    Huber { h: f64 },
}

impl Loss {
    /// The Huber SVM loss with the surveys' h = 0.5.
    pub const HUBER_SVM: Loss = Loss::Huber { h: 0.5 };

    /// ℓ(m).
    pub fn value(self, m: f64) -> f64 {
        match self {
            Loss::Logistic => {
                if m > 0.0 {
                    (-m).exp().ln_1p()
                } else {
                    m.exp().ln_1p() - m
                }
            }
            Loss::Huber { h } => {
                if m > 1.0 + h {
                    0.0
                } else if m < 1.0 - h {
                    1.0 - m
                } else {
                    (1.0 + h - m).powi(2) / (4.0 * h)
                }
            }
        }
    }

    /// ℓ'(m), in [−1, 0] for both losses.
    #[inline]
    pub fn derivative(self, m: f64) -> f64 {
        match self {
            Loss::Logistic => {
                if m >= 0.0 {
                    let e = (-m).exp();
                    -e / (1.0 + e)
                } else {
                    -1.0 / (1.0 + m.exp())
                }
            }
            Loss::Huber { h } => {
                if m > 1.0 + h {
                    0.0
                } else if m < 1.0 - h {
                    -1.0
                } else {
                    -(1.0 + h - m) / (2.0 * h)
                }
            }
        }
    }

    /// ℓ''(m) where it exists (the Huber loss's kinks take the inner side's value).
    #[inline]
    pub fn second_derivative(self, m: f64) -> f64 {
        match self {
            Loss::Logistic => {
                let s = super::solver::sigmoid(m);
                s * (1.0 - s)
            }
            Loss::Huber { h } => {
                if (m - 1.0).abs() <= h {
                    1.0 / (2.0 * h)
                } else {
                    0.0
                }
            }
        }
    }

    /// The bound c on ℓ'' that objective perturbation's Jacobian term needs: 1/4 for the
    /// logistic loss, 1/(2h) for the Huber loss (Chaudhuri et al. 2011, section 3.4).
    pub fn curvature(self) -> f64 {
        match self {
            Loss::Logistic => 0.25,
            Loss::Huber { h } => 1.0 / (2.0 * h),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Loss::Logistic => "logistic loss".into(),
            Loss::Huber { h } => format!("Huber SVM loss, h = {h}"),
        }
    }
}
