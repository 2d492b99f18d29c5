r"""A proven lower bound of DP heavy ball's least worst-case error over every
:math:`(\alpha,\beta,T)` (quadratic class), by branch and bound **[DERIVED]**.

The tuner's objective (:mod:`dpbounds.tuning._worst_case_search`, derivation in
:mod:`dpbounds.bounds.strongly_convex.quadratic_worst_case`) is, with :math:`\ell=\ell(T)` the
per-coordinate Laplace variance of a run of horizon :math:`T` (nondecreasing in :math:`T`),
:math:`\sigma` the sampling variance,
:math:`A_T(\lambda)=w(\lambda)p_T(\lambda)^2` (:math:`w=E_0`, or :math:`D\lambda/2`) and
:math:`U_T(\lambda)=\frac\lambda2\alpha^2\sum_{j<T}h_j(\lambda)^2`,

.. math::

    W(\alpha,\beta,T)=\max\Big(\max_\lambda[A_T+(\ell+\sigma)U_T]+(d-1)\ell\max_\lambda U_T,\;
    \max_\lambda[A_T+\ell U_T]+(\sigma+(d-1)\ell)\max_\lambda U_T\Big)

(the second term for :math:`d\ge2`), the sup over :math:`\lambda\in[\mu,L]`. Here
:math:`p_T` is the residual of heavy ball started at rest (:math:`e_{t+1}=ae_t-\beta e_{t-1}`,
:math:`e_0=e_{-1}=1`, :math:`a=1+\beta-\alpha\lambda`) and :math:`h_j` its impulse response
(:math:`h_0=1`, :math:`h_{-1}=0`). Every step below is **[DERIVED]** here and checked against
dense evaluation in ``tests/tuning/test_certify_error.py``.

0. **Instances.** Dropping the sups for chosen eigenvalues (each choice is an admissible
   instance, so its error is at most the sup): for :math:`\lambda_1\in[\mu,L]` and
   :math:`\lambda_2\in\{\mu,L\}`,
   :math:`W\ge A_T(\lambda_1)+(\ell+\sigma)U_T(\lambda_1)+(d-1)\ell\,U_T(\lambda_2)`,
   :math:`W\ge A_T(\lambda_1)+\ell U_T(\lambda_1)+(\sigma+(d-1)\ell)U_T(\lambda_2)` (for
   :math:`d\ge2`) and :math:`W\ge(d\ell+\sigma)U_T(\lambda_2)`. On a box
   :math:`[\alpha_0,\alpha_1]\times[\beta_0,\beta_1]\times[T_0,T_1]` each of :math:`A`,
   :math:`U`, :math:`\ell` is replaced by a lower bound valid on the whole box (1-4); the
   start term is bounded at :math:`\lambda_1=\mu` (1) and :math:`\lambda_1=L` (1', 4), the
   noise :math:`U` there likewise, and (1'') at some :math:`\lambda_1` of
   :math:`[\mu,\lambda_N]`, :math:`\lambda_N=\min(4\mu,L)` the largest eigenvalue 1'' uses,
   paired with step 2's bound of :math:`U` over that range (valid at every eigenvalue of it;
   before the monotone Chebyshev terms of step 2 this pairing used the bound at :math:`\mu`,
   which the tighter noise bound at :math:`\mu` showed to be wrong: a box bound 0.5% above the
   worst case at :math:`L/\mu=100`, :math:`m<n`, :math:`T\approx40`, caught by the per-horizon
   oracle).
1. **Start term, positive side** (:math:`\lambda=\mu`). Perturbing the recursion gives
   :math:`\partial p_T/\partial a=\sum_{t<T}h_{T-1-t}p_t` and, along :math:`\beta` at fixed
   :math:`\alpha`, :math:`dp_T/d\beta=\sum_{t<T}h_{T-1-t}(p_t-p_{t-1})`; and
   :math:`p_t=1-\alpha\lambda\sum_{j<t}h_j` (the constant 1 solves the homogeneous recursion),
   so :math:`p_t-p_{t-1}=-\alpha\lambda h_{t-1}`. Suppose :math:`h_j\ge0` for :math:`j<T_1` on
   the whole box. Then :math:`p_t` is nonincreasing in :math:`t\le T_1`, nonincreasing in
   :math:`\beta`, and nonincreasing in :math:`\alpha` where :math:`p_t\ge0` for :math:`t<T_1`.
   Walk from any point of the box to the corner :math:`(\alpha_1,\beta_1)` (first
   :math:`\alpha` up, then :math:`\beta` up): if :math:`p_{T_1}` at the corner is
   :math:`\ge0`, every :math:`p_t` (:math:`t\le T_1`) at the corner is :math:`\ge0`, and going
   back along the walk they stay :math:`\ge` their corner values (on the last stretch where
   all are :math:`\ge0` their derivatives have the sign above; by continuity that stretch is
   the whole walk). So on the box, for :math:`T_0\le T\le T_1`,
   :math:`p_T\ge p_{T_1}\ge p_{T_1}(\alpha_1,\beta_1)` and
   :math:`A_T(\mu)\ge w(\mu)\max(p_{T_1}(\alpha_1,\beta_1),0)^2`.
   **When** :math:`h_j\ge0`, :math:`j<T_1`: :math:`h_j=\beta^{j/2}U_j(c)`,
   :math:`c=a/(2\sqrt\beta)` (Chebyshev of the second kind); for real roots with
   :math:`a\ge0` every :math:`h_j>0`; for complex roots, :math:`c=\cos\theta` and
   :math:`h_j=\beta^{j/2}\sin((j+1)\theta)/\sin\theta\ge0` for :math:`(j+1)\theta\le\pi`. Both
   are :math:`a\ge2\sqrt\beta\cos(\pi/T_1)`; :math:`a` is least at :math:`\alpha_1`, so the
   condition is :math:`s^2-2sC+1-\alpha_1\mu\ge0` on :math:`s=\sqrt\beta\in[\sqrt{\beta_0},
   \sqrt{\beta_1}]`, :math:`C=\cos(\pi/T_1)`: a quadratic in :math:`s`, checked at its least
   point in the interval (with a margin :math:`10^{-12}` for rounding). Elsewhere the bound is
   0.

   1''. **Negative side** (:math:`\lambda=\mu2^{i/2}`, :math:`i=0..4`, those :math:`\le L`:
   where the mode turns within :math:`T`). With :math:`H_T=\sum_{j<T}h_j`,
   :math:`p_T=1-\alpha\lambda H_T`. Where :math:`h_j\ge0` (:math:`j<T_1`) on the rectangle
   :math:`[a_{lo},a_{hi}]\times[\beta_0,\beta_1]` of :math:`(a,\beta)` (:math:`a_{lo}=1+\beta_0-
   \alpha_1\lambda`; the condition :math:`a_{lo}\ge2\sqrt{\beta_1}\cos(\pi/T_1)`),
   :math:`\partial h_j/\partial a=\sum_{i<j}h_{j-1-i}h_i\ge0` and
   :math:`\partial h_j/\partial\beta=-\sum_ih_{j-1-i}h_{i-1}\le0` at fixed :math:`a`, so
   :math:`H_T\ge H_{T_0}(a_{lo},\beta_1)\ge0` for :math:`T\in[T_0,T_1]` and
   :math:`p_T\le1-\alpha_0\lambda H_{T_0}(a_{lo},\beta_1)`; where that is negative,
   :math:`A_T(\lambda)\ge w(\lambda)(\alpha_0\lambda H_{T_0}(a_{lo},\beta_1)-1)^2`.

   1'. **At** :math:`L` **where** :math:`a<0` on the box (:math:`\alpha_0L>1+\beta_1`):
   :math:`f_t=(-1)^te_t` obeys :math:`f_{t+1}=|a|f_t-\beta f_{t-1}` (:math:`f_0=1`,
   :math:`f_{-1}=-1`), so :math:`|p_T(L)|=f_T=h^+_T+\beta h^+_{T-1}` with :math:`h^+` the
   impulse response for :math:`|a|`. Where :math:`|a|\ge2\sqrt\beta\cos(\pi/(2(T_1+1)))` (real
   roots, or complex ones with :math:`(T_1+1)\theta\le\pi/2`), :math:`h^+_j\ge\frac2\pi(j+1)
   \beta^{j/2}` for :math:`j\le T_1` (real: :math:`\sum_ir_1^ir_2^{j-i}\ge(j+1)\beta^{j/2}` by
   AM-GM; complex: :math:`\sin x\ge2x/\pi` on :math:`[0,\pi/2]`, :math:`\theta\ge\sin\theta`),
   so :math:`|p_T(L)|\ge\frac2\pi(T_0+1)\beta_0^{T_1/2}` on :math:`[T_0,T_1]`.
   Also, where the roots are **real** on the whole box (:math:`\min a^2\ge4\beta_1`,
   :math:`a<0`): the roots :math:`r_1\ge r_2\ge0` of :math:`z^2-|a|z+\beta` give
   :math:`h^+_j=\sum_{i\le j}r_1^ir_2^{j-i}\ge0`, so :math:`|p_T(L)|=h^+_T+\beta h^+_{T-1}
   \ge h^+_T\ge r_1^T` (the term :math:`i=T`), and :math:`r_1=(|a|+\sqrt{a^2-4\beta})/2`
   grows with :math:`|a|` and falls with :math:`\beta`: :math:`r_1\ge\rho_{lo}=(\min|a|+
   \sqrt{\min a^2-4\beta_1})/2`, :math:`\min|a|=\alpha_0L-1-\beta_1`; on
   :math:`[T_0,T_1]`, :math:`|p_T(L)|\ge\rho_{lo}^{T_1}` (:math:`\rho_{lo}\le1`) or
   :math:`\rho_{lo}^{T_0}` (:math:`\rho_{lo}>1`). For :math:`\beta=0` (gradient descent) this
   is :math:`|1-\alpha_0L|^{T}`, exact at :math:`\alpha_0`; the bound above it gives 0 there
   (:math:`\beta_0^{T_1/2}=0`), so without it a step :math:`\alpha L>1` had no start term at
   :math:`L`. (It multiplies :math:`\rho_{lo}` by :math:`1-10^{-12}` for rounding and caps
   :math:`|p_T|` at :math:`10^{150}`.)
2. **Noise term**, :math:`\Sigma_k=\sum_{j<k}h_j^2` (nondecreasing in :math:`k`, so on
   :math:`[T_0,T_1]` it is taken at :math:`k=T_0`, and a bound at :math:`k` holds at every later
   :math:`k`: the running maximum over the intervals is taken), the largest of

   * :math:`\Sigma_k\ge1+[k\ge2]\min a^2` (:math:`h_0=1`, :math:`h_1=a`);
   * (stable box: :math:`\alpha_1\lambda<2(1+\beta_0)`) *stationary minus tail*:
     :math:`\Sigma_\infty-\Sigma_k=e_1^\top M^kS_\infty M^{k\top}e_1` with
     :math:`e_1^\top M^k=(h_k,-\beta h_{k-1})` and
     :math:`S_\infty=\Sigma_\infty\begin{bmatrix}1&r\\r&1\end{bmatrix}`, :math:`r=a/(1+\beta)`
     (:math:`\sum h_{j+1}h_j=a\Sigma_\infty-\beta\sum h_jh_{j-1}`), :math:`|r|<1`, so
     :math:`\Sigma_k\ge\Sigma_\infty(1-(|h_k|+\beta|h_{k-1}|)^2)`; and
     :math:`\frac\lambda2\alpha^2\Sigma_\infty=\frac{\alpha(1+\beta)}{2(1-\beta)(2+2\beta-
     \alpha\lambda)}\ge\frac{\alpha_0(1+\beta_0)}{2(1-\beta_0)(2+2\beta_1-\alpha_0\lambda)}`
     (each factor at its least or largest). :math:`|h_k|\le(k+1)\rho^k`
     (:math:`h_k=\sum_ir_1^ir_2^{k-i}`), :math:`\rho\le\max(\sqrt{\beta_1},(A+\sqrt{(A^2-
     4\beta_0)_+})/2)`, :math:`A=\max|a|` on the box (the spectral radius grows in
     :math:`|a|` and falls in :math:`\beta` for real roots, is :math:`\sqrt\beta` for complex
     ones); and :math:`|h_k|\le\beta_1^{k/2}g_{k+1}(A/(2\sqrt{\beta_0}))`, :math:`g` the
     nondecreasing envelope of :math:`|U_k|` of
     :func:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.log_chebyshev_envelope`;
   * (complex roots and stable on the whole box) *stationary minus the tail of complex
     roots*: :math:`h_j=\beta^{j/2}\sin((j+1)\theta)/\sin\theta` and
     :math:`\sin^2x=(1-\cos2x)/2` give :math:`\Sigma_\infty-\Sigma_k=\sum_{j\ge k}h_j^2=
     \frac1{2\sin^2\theta}\sum_{j\ge k}\beta^j(1-\cos2(j+1)\theta)\le
     \frac{\beta^k}{2\sin^2\theta}\big(\frac1{1-\beta}+\frac1{|1-\beta e^{2i\theta}|}\big)`
     (the sum of :math:`\beta^je^{2i(j+1)\theta}` over :math:`j\ge k` has modulus
     :math:`\beta^k/|1-\beta e^{2i\theta}|`), with :math:`|1-\beta e^{2i\theta}|^2=
     (1-\beta)^2+4\beta\sin^2\theta\ge(1-\beta_1)^2+4\beta_0\sin^2_{lo}`,
     :math:`\sin_{lo}=\sqrt{1-A^2/(4\beta_0)}` as below; so
     :math:`U_k\ge\frac\lambda2\alpha^2\Sigma_\infty-\frac{\lambda_{hi}}2\alpha_1^2
     \frac{\beta_1^k}{2\sin^2_{lo}}\big(\frac1{1-\beta_1}+\frac1{\sqrt{(1-\beta_1)^2+
     4\beta_0\sin^2_{lo}}}\big)` with the first term bounded as in the stationary bound
     (:math:`\lambda_{hi}` the largest eigenvalue of the range, :math:`\lambda` itself where
     the range is one point). Unlike the triangle bound :math:`(|h_k|+\beta|h_{k-1}|)^2`
     above, it keeps the average 1/2 of :math:`\sin^2` on the tail; at
     :math:`L/\mu=100`, :math:`m<n` (``bench/worst_case_bracket.md``) it takes the noise at
     :math:`L` from 74% to 99% of its value at :math:`T=16` on the box that was the weakest
     (and that box's bound from 76% to 96% of the least worst case at its corner);
   * (at one eigenvalue; :math:`a` of one sign on the box) *monotone Chebyshev terms*:
     :math:`h_j=\beta^{j/2}U_j(c)`, :math:`c=|a|/(2\sqrt\beta)` up to the sign
     :math:`(-1)^j` (:math:`g_j=h_j\beta^{-j/2}` obeys :math:`g_{j+1}=2cg_j-g_{j-1}`, for real
     and complex roots alike), and :math:`U_j` (all roots real, the largest
     :math:`\cos(\pi/(j+1))`, positive leading coefficient) is nonnegative and increasing on
     :math:`[\cos(\pi/(j+1)),\infty)`; with :math:`c\ge c_{lo}=\min|a|/(2\sqrt{\beta_1})`,
     :math:`h_j^2\ge\beta_0^jU_j(c_{lo})^2` for every :math:`j<J=\lfloor\pi/\arccos c_{lo}
     \rfloor` (every :math:`j` where :math:`c_{lo}\ge1`), so :math:`\Sigma_k\ge
     \sum_{j<\min(k,J)}\beta_0^jU_j(c_{lo})^2`, computed as the impulse response of
     :math:`(2\sqrt{\beta_0}c_{lo},\beta_0)` (nonnegative there; :math:`4u(k+1)^2` of it is
     subtracted for rounding). Near critical damping at :math:`\mu` this is the noise of the
     slow mode almost exactly, where the bound below loses :math:`\beta_0^{k-1}` against
     :math:`\beta_0^j` term by term: at :math:`L/\mu=100`, :math:`m<n` the noise at
     :math:`\mu` of the then weakest box (at :math:`T=18`) went from 27% to 90% of its value
     at the box's corner, and that box's bound from 88% to 96% of the least worst case there.
     It costs
     :math:`O(k)` per box and is run at :math:`\mu` and :math:`L` only (not on the ranges of
     step 5');
   * (complex roots on the whole box: :math:`A<2\sqrt{\beta_0}`)
     :math:`\Sigma_k=\sum_{i=1}^k\beta^{i-1}\sin^2(i\theta)/\sin^2\theta`, and
     :math:`\sum_{i\le k}\beta^{i-1}\cos2i\theta` is the real part of
     :math:`e^{2i\theta}(1-z^k)/(1-z)`, :math:`z=\beta e^{2i\theta}`,
     :math:`|1-z|\ge2\sqrt\beta\sin\theta`, so
     :math:`\Sigma_k\ge\big(\frac{1-\beta_0^k}{2(1-\beta_0)}-\frac1{2\sqrt{\beta_0}\sin\theta}
     \big)/\sin^2\theta` with :math:`\sin\theta\ge\sqrt{1-A^2/(4\beta_0)}` and
     :math:`\sin^2\theta\le1-\min a^2/(4\beta_1)`;
   * (real roots of one sign on the whole box: :math:`\min a^2\ge4\beta_1`, :math:`a` of one
     sign) :math:`|h_j|\ge\rho^j`, :math:`\rho\ge(\min|a|+\sqrt{\min a^2-4\beta_1})/2`, so
     :math:`\Sigma_k\ge\sum_{j<k}\rho^{2j}`;
   * (every box) the invariant :math:`h_j^2-ah_jh_{j-1}+\beta h_{j-1}^2=\beta^j` and
     :math:`x^2-axy+\beta y^2\le(1+A/2)(x^2+y^2)` give :math:`h_j^2+h_{j-1}^2\ge\beta^j/(1+A/2)`,
     so :math:`\Sigma_k\ge\sum_{j=1}^{k-1}\beta_0^j/(2+A)`;
   * (as in 1': one sign of :math:`a` and :math:`\min|a|\ge2\sqrt{\beta_1}\cos(\pi/(2k))`)
     :math:`|h_j|\ge\frac2\pi(j+1)\beta^{j/2}`, so
     :math:`\Sigma_k\ge\frac4{\pi^2}\beta_0^{k-1}k(k+1)(2k+1)/6`.

   :math:`U_k\ge\frac\lambda2\alpha_0^2\Sigma_k`, except the stationary bound (already a bound
   of :math:`U`).
3. **Noise level**: :math:`\ell(T)\ge\ell(T_0)` on :math:`[T_0,T_1]` (``laplace_var``
   nondecreasing, the built-in's closed form). **Any noise sequence** (``any_noise=True``, a
   plug-in's own calibration, :func:`dpbounds.extend.tune`): :math:`\ell(T)\ge
   \min_{T_0\le t\le T_1}\ell(t)`, the least of the sequence evaluated at every horizon of
   the interval. Nothing else in 0-5 uses how :math:`\ell` depends on :math:`T`: at each
   :math:`T`, :math:`W` is a sum of start terms and of :math:`\ell(T)` (and :math:`\sigma`)
   times terms :math:`U\ge0`, every lower bound of steps 1-2 (5) is :math:`\ge0` and holds
   for every :math:`T` of the interval whatever the noise, so a lower bound of :math:`\ell`
   on the interval gives one of :math:`W` there **[DERIVED]**. Where :math:`\ell` is
   nondecreasing both are :math:`\ell(T_0)`.
4. **Unstable points.** If :math:`\alpha\lambda\ge2(1+\beta)`, then :math:`|a|-1\ge\beta` and
   (1') :math:`f_{t+1}-f_t\ge\beta(f_t-f_{t-1})\ge0`, :math:`f_1-f_0=|a|+\beta-1\ge0`, so
   :math:`|p_T(\lambda)|\ge1` for every :math:`T`: :math:`A_T(L)\ge w(L)`. This covers every
   :math:`\alpha\ge4/L` (one unbounded tail, :math:`W\ge w(L)`) and any box with
   :math:`\alpha_0L\ge2(1+\beta_1)`.

5. **Start term of an oscillating mode: the sweep of the phase.** For complex roots
   (:math:`a^2<4\beta`, :math:`a=2\sqrt\beta\cos\theta`, :math:`\theta\in(0,\pi)`) the residual
   is :math:`p_T=\beta^{T/2}(\cos T\theta+B\sin T\theta)`, :math:`B=(\cos\theta-\sqrt\beta)/
   \sin\theta` (it solves the recursion, :math:`p_0=1`, and :math:`p_{-1}=\beta^{-1/2}
   (\cos\theta-B\sin\theta)=1`), i.e. :math:`p_T=\beta^{T/2}R\cos\psi`,
   :math:`\psi=T\theta-\varphi`, :math:`\varphi=\arctan B`, with
   :math:`R^2=1+B^2=(1-2\sqrt\beta\cos\theta+\beta)/\sin^2\theta=\alpha\lambda/\sin^2\theta`,
   and :math:`R^2\ge1` (:math:`(\cos\theta-\sqrt\beta)^2\ge0` gives
   :math:`1-2\sqrt\beta\cos\theta+\beta\ge\sin^2\theta`). :math:`dB/d\theta=(\sqrt\beta
   \cos\theta-1)/\sin^2\theta<0`, so :math:`\varphi` falls as :math:`\theta` grows and
   :math:`\psi` grows by at least :math:`T` times the growth of :math:`\theta`. The roots are
   complex iff :math:`(1-\sqrt\beta)^2<\alpha\lambda<(1+\sqrt\beta)^2`, so at every point of the
   box they are complex (or double, at an end: :math:`p_T` is continuous in :math:`\lambda`)
   for :math:`\lambda\in[\lambda_a,\lambda_b]`, :math:`\lambda_a=\max(\mu,(1-\sqrt{\beta_0})^2/
   \alpha_0)`, :math:`\lambda_b=\min(L,(1+\sqrt{\beta_0})^2/\alpha_1)`. Take a piece
   :math:`[l,h]` of it (the whole, and those of relative length :math:`4^{-k}`, :math:`k\le6`, at
   either end: near critical damping :math:`R` is large). At a fixed point, across the piece
   :math:`c=\cos\theta=a/(2\sqrt\beta)` falls by :math:`\alpha(h-l)/(2\sqrt\beta)\ge
   D=\alpha_0(h-l)/(2\sqrt{\beta_1})` and stays in :math:`[c_{lo},c_{hi}]` (numerator
   :math:`a\in[1+\beta_0-\alpha_1h,1+\beta_1-\alpha_0l]` over :math:`2\sqrt\beta\in
   [2\sqrt{\beta_0},2\sqrt{\beta_1}]`, each end taken where it is extreme), so :math:`\theta`
   grows by at least the growth of arccos over the subinterval of length
   :math:`\min(D,c_{hi}-c_{lo})` of :math:`[c_{lo},c_{hi}]` nearest 0 (:math:`|\arccos'|=
   1/\sqrt{1-c^2}` is least at 0 and grows with :math:`|c|`), :math:`\Delta\theta`, and
   :math:`\psi` sweeps an interval of length at least :math:`s=T_0\Delta\theta`. Where
   :math:`s\ge\pi` some :math:`\lambda^*` of the piece has :math:`|\cos\psi|=1`; where
   :math:`0<s<\pi`, some has :math:`|\cos\psi|\ge\sin(s/2)` (the least, over intervals of
   length :math:`s`, of the largest :math:`|\cos|` on it: centred on a zero). At
   :math:`\lambda^*`, :math:`R^2=\alpha\lambda^*/(1-c^2)\ge\max(1,\alpha_0l/(1-c_{\min}^2))`,
   :math:`c_{\min}^2` the least :math:`c^2` on :math:`[c_{lo},c_{hi}]`. So for
   :math:`T\in[T_0,T_1]`, :math:`\max_\lambda A_T(\lambda)\ge w(l)\,\beta_0^{T_1}\max(1,
   \alpha_0l/(1-c_{\min}^2))\sin^2(\min(s,\pi)/2)`, the largest over the pieces; and, with
   that :math:`\lambda^*` as :math:`\lambda_1` of step 0, :math:`U_T(\lambda^*)` is bounded below
   by step 2 run with :math:`a\in[1+\beta_0-\alpha_1\lambda_b,1+\beta_1-\alpha_0\lambda_a]`
   (every bound of step 2 uses only the ranges of :math:`a` and :math:`\beta`, and factors
   :math:`\lambda`, :math:`\alpha\lambda` that grow with :math:`\lambda`, taken at
   :math:`\lambda_a`). Unlike steps 1-1'' this needs no sign of :math:`h_j`: it bounds the
   damped oscillating modes. It is checked per horizon against dense evaluation (with a fine
   grid of eigenvalues: the bound is within a few percent of the sup over :math:`\lambda`, whose
   peaks a coarse grid misses) in ``tests/tuning/test_certify_error.py``.

   5'. **Each piece with its own noise.** The :math:`\lambda^*` of a piece :math:`[l,h]` lies
   in that piece, so step 0 holds with :math:`U_T(\lambda^*)` bounded below by step 2 run on
   :math:`\lambda\in[l,h]` (:math:`a\in[1+\beta_0-\alpha_1h,1+\beta_1-\alpha_0l]`, factors
   :math:`\lambda` at :math:`l`; and not below the bound over :math:`[\lambda_a,\lambda_b]`,
   which holds there too): per piece, :math:`W\ge A^{(l,h)}+(\ell+\sigma)U^{(l,h)}+
   (d-1)\ell\max_\lambda U` (and the :math:`d\ge2` form). Near critical damping the piece is
   short, :math:`a` stays near :math:`2\sqrt\beta` and the noise there is near its stationary
   value, where over the whole interval (:math:`a` down to :math:`1+\beta_0-\alpha_1\lambda_b`)
   step 2 gives almost nothing: at :math:`L/\mu=10^3`, :math:`d=1` the bound of the box that
   was the weakest went from 63% to 94% of the least worst case at its corner. Cost: one run
   of step 2 per piece; it is run only at the boxes and horizon intervals where the bound of
   steps 0-5 is below the branch and bound's threshold (elsewhere it cannot change the
   result; leaving it out only weakens a bound), which keeps it to ~2 CPU-s per tune.

6. **An instance at one eigenvalue, by Taylor's formula on the box.** Steps 1-5 bound the
   start term at :math:`\mu`, :math:`L`, :math:`\mu2^{i/2}` or over a piece of the oscillating
   interval with its least amplitude and worst phase; where the worst eigenvalue is a peak
   inside :math:`(\mu,L)` at a short horizon (:math:`L/\mu=4`, :math:`T=9`: the peak at
   :math:`1.25\mu` was bounded at 55% of its value) that is loose. Fix any
   :math:`\lambda_1\in[\mu,L]` per box and horizon interval (step 0 holds for every one; it is
   chosen as the maximiser, at the box's centre :math:`c=(\alpha_c,\beta_c)`, of the least
   start term over the interval plus :math:`(\ell+\sigma)` times the noise at :math:`T_0`, on
   33 Chebyshev-Lobatto and 33 geometric eigenvalues, then 9 between the neighbours of each
   of the best three, then 9 around the best of those: the start term's peak near
   :math:`\mu` can sit between two grid points that are both below an end). With
   :math:`D=\partial/\partial a` and :math:`B=\partial/\partial\beta` at fixed :math:`a`,
   differentiating :math:`e_{t+1}=ae_t-\beta e_{t-1}` (:math:`e_0=e_{-1}=1`) gives
   :math:`\partial^{(i,j)}e_{t+1}=a\,\partial^{(i,j)}e_t-\beta\,\partial^{(i,j)}e_{t-1}+
   i\,\partial^{(i-1,j)}e_t-j\,\partial^{(i,j-1)}e_{t-1}` (zero starts for :math:`i+j\ge1`), so
   :math:`\partial^{(i,j)}e_T=\sum_{t<T}h_{T-1-t}(i\,\partial^{(i-1,j)}e_t-j\,\partial^{(i,j-1)}
   e_{t-1})`; likewise for :math:`h` (:math:`h_0=1`, :math:`h_{-1}=0`). On the box
   :math:`|h_j|\le H_j=(j+1)\rho^j` (step 2's :math:`\rho`, the largest root modulus), whose
   :math:`k`-fold convolution is :math:`C_k(n)=\rho^n\binom{n+2k-1}{2k-1}`, and
   :math:`|e_t|\le H_t+\beta_1H_{t-1}` (:math:`e_t=h_t-\beta h_{t-1}`; :math:`e_{-1}=1`).
   Hence, on the box, :math:`|D^2e_T|\le2(C_3(T-2)+\beta_1C_3(T-3))`,
   :math:`|DBe_T|\le2(C_3(T-3)+\beta_1C_3(T-4))+C_2(T-2)`,
   :math:`|B^2e_T|\le2(C_3(T-4)+\beta_1C_3(T-5)+C_2(T-3))`, and :math:`|D^2h_j|\le2C_3(j-2)`,
   :math:`|DBh_j|\le2C_3(j-3)`, :math:`|B^2h_j|\le2C_3(j-4)` (each convolution of majorants
   majorises; :math:`C_k(n)=0` for :math:`n<0`). In the box's coordinates
   (:math:`a=1+\beta-\alpha\lambda_1`: :math:`\partial_\alpha=-\lambda_1D`,
   :math:`\partial_\beta=D+B`) Taylor's formula at the centre with half-widths
   :math:`\delta_\alpha,\delta_\beta` gives :math:`|f(x)-f(c)|\le\lambda_1|Df(c)|\delta_\alpha+
   |(D+B)f(c)|\delta_\beta+\frac12(\lambda_1^2M_{aa}\delta_\alpha^2+2\lambda_1(M_{aa}+M_{ab})
   \delta_\alpha\delta_\beta+(M_{aa}+2M_{ab}+M_{bb})\delta_\beta^2)` for :math:`f=e_t` or
   :math:`h_j`, :math:`M` the majorants above; the first derivatives at the centre are run
   by the recursions themselves, and :math:`4u(t+1)^2` times the majorant of :math:`|f|` is
   added for rounding. So :math:`A_T(\lambda_1)\ge w(\lambda_1)\min_{T_0\le t\le T_1}
   (|e_t(c)|-\Delta_t)_+^2` and :math:`U_T(\lambda_1)\ge\frac{\lambda_1}2\alpha_0^2\sum_{j<T_0}
   (|h_j(c)|-\Delta^h_j)_+^2`, paired in step 0 (with :math:`\max_\lambda U` at least the
   larger of its bound and :math:`U(\lambda_1)`'s).

   **Third order.** The second-order majorants grow like :math:`T^5` and are loose by orders
   of magnitude at tens of steps (they ignore the oscillation of :math:`h`). The same formula
   one order further: the first **and second** derivatives at the centre, run by the
   recursions (differentiating once more: :math:`D^2e_{t+1}=aD^2e_t-\beta D^2e_{t-1}+2De_t`,
   :math:`DBe_{t+1}=aDBe_t-\beta DBe_{t-1}+Be_t-De_{t-1}`,
   :math:`B^2e_{t+1}=aB^2e_t-\beta B^2e_{t-1}-2Be_{t-1}`, likewise for :math:`h`), and
   majorants of the third derivatives on the box. With :math:`G=1/(1-az+\beta z^2)` the
   generating function of :math:`h`, :math:`\partial_aG=zG^2` and :math:`\partial_\beta G=
   -z^2G^2`, so :math:`D^pB^qh_j=(p+q)!(-1)^qh^{*(p+q+1)}_{j-p-2q}` and
   :math:`|D^pB^qh_j|\le(p+q)!\,C_{p+q+1}(j-p-2q)`; from :math:`e_t=h_t-\beta h_{t-1}`,
   :math:`D^pB^qe_t=D^pB^qh_t-\beta D^pB^qh_{t-1}-qD^pB^{q-1}h_{t-1}`, so for
   :math:`p+q=3`, :math:`|D^pB^qe_t|\le6C_4(t-p-2q)+6\beta_1C_4(t-p-2q-1)+2qC_3(t-p-2q+1)`
   (the same rule gives the second-order majorants above). Along a segment from the centre
   (:math:`\delta a=-\lambda_1\delta\alpha+\delta\beta`, :math:`|\delta a|\le A=\lambda_1
   \delta_\alpha+\delta_\beta`), :math:`|f(x)-f(c)|\le\lambda_1|Df|\delta_\alpha+|(D+B)f|
   \delta_\beta+\frac12(\lambda_1^2|D^2f|\delta_\alpha^2+2\lambda_1|D^2f+DBf|\delta_\alpha
   \delta_\beta+|D^2f+2DBf+B^2f|\delta_\beta^2)+\frac16\sum_{p+q=3}\binom3pM_{pq}A^p
   \delta_\beta^q` (derivatives at :math:`c`, each second one raised by :math:`4u(t+1)^2`
   times its majorant for rounding). Both forms are valid; the smaller is used. At Fig. 3's
   weakest leaf (:math:`T=65`, relative width :math:`3\cdot10^{-4}`) the start bound went from
   61% to 98% of its value at the centre.

   Where it is run: for :math:`T_1\le` :data:`_INSTANCE_TMAX`, at each box's
   :data:`_INSTANCE_PER_ROUND` weakest horizon intervals a round (:data:`_INSTANCE_ROUNDS`
   rounds) whose bound is below the branch and bound's threshold, above it divided by
   :data:`_INSTANCE_WITHIN`, and below the box's least interval that step 6 cannot raise (a
   box's bound is its least interval's; a box further below is cut anyway, and leaving step 6
   out only weakens a bound). Near the optimum many horizons are nearly as good, so one
   interval a box was not enough: Fig. 3's weakest leaves had five intervals within 3% of
   the threshold.
   Checked per horizon against dense evaluation in ``tests/tuning/test_certify_error.py``
   (step 6 at every interval of boxes near two optima), with mutants (the remainder left
   out; the bound x1.02) that the check catches; the third-order spread on its own against
   the start term on a grid of each box (boxes of relative width up to 0.1, :math:`T` up to
   250; the spread halved is caught).

7. **An instance at one eigenvalue, by the closed form of the oscillating mode** **[DERIVED]**.
   Step 6's remainders grow like a power of :math:`T` and it is not run past
   :data:`_INSTANCE_TMAX`; at :math:`L/\mu=10^5` (:math:`T^*\approx1250`) step 5's sweep left the
   start bound ~20% below its value on boxes of relative width :math:`10^{-3}`. Where every
   point of the box has complex roots at :math:`\lambda_1`
   (:math:`(1-\sqrt{\beta_0})^2/\alpha_0<\lambda_1<(1+\sqrt{\beta_0})^2/\alpha_1`),
   :math:`e_t=\beta^{t/2}R\cos(t\theta-\varphi)` and :math:`h_j=\beta^{j/2}\sin((j+1)\theta)/
   \sin\theta` (step 5; :math:`e_0=e_{-1}=1`, :math:`h_0=1`, :math:`h_{-1}=0`), with
   :math:`\cos\theta=c=(1+\beta-\alpha\lambda_1)/(2\sqrt\beta)`, :math:`B=(c-\sqrt\beta)/
   \sin\theta`, :math:`\varphi=\arctan B`, :math:`R^2=1+B^2=\alpha\lambda_1/\sin^2\theta`. The
   range of :math:`c` on the box is exact: :math:`c` falls with :math:`\alpha`, and
   :math:`\partial_\beta c` has the sign of :math:`\beta-1+\alpha\lambda_1`, so over
   :math:`\beta` it is largest at an end and least at an end or at :math:`\beta=1-\alpha
   \lambda_1`, where it is :math:`\sqrt{1-\alpha\lambda_1}\ge\sqrt{1-\alpha_s\lambda_1}`
   (:math:`\alpha_s` the largest :math:`\alpha` of the box with :math:`1-\alpha\lambda_1\ge
   \beta_0`); :math:`\theta=\arccos c` gives :math:`[\theta_{lo},\theta_{hi}]`. :math:`B` by
   interval arithmetic (:math:`c-\sqrt\beta` over :math:`\sin\theta`), so :math:`\varphi\in
   [\varphi_{lo},\varphi_{hi}]` and :math:`R\ge\max(\sqrt{1+B_{\min}^2},\sqrt{\alpha_0
   \lambda_1}/\sin_{\max}\theta)`. For :math:`t\in[T_0,T_1]` the phase :math:`t\theta-\varphi`
   lies in :math:`[T_0\theta_{lo}-\varphi_{hi},T_1\theta_{hi}-\varphi_{lo}]`, so
   :math:`|e_t|\ge\beta_0^{T_1/2}R_{\min}m`, :math:`m` the least :math:`|\cos|` there (0 if it
   holds a zero :math:`\pi/2+k\pi`); likewise :math:`h_j^2\ge\beta_0^j s_j/\sin^2_{\max}
   \theta`, :math:`s_j` the least :math:`\sin^2` on :math:`[(j+1)\theta_{lo},(j+1)
   \theta_{hi}]`, summed for :math:`U_{T_0}(\lambda_1)\ge\frac{\lambda_1}2\alpha_0^2\sum_{j<T_0}
   \cdot`. Both are paired in step 0 (with step 2's bound at :math:`\lambda_1`, the larger).
   Unlike Taylor's formula, the width of the phase range is :math:`t` times the box's width
   in :math:`\theta` (about :math:`10^{-2}` rad at :math:`T\approx1200` on the leaves above)
   and the oscillation is exact. Rounding: :math:`c`'s range widened by its rounding error,
   :math:`8u(1+(2+\alpha_1\lambda_1)/(2\sqrt{\beta_0}))` (:func:`_cos_pad`: :math:`8u` alone
   was wrong for small :math:`\beta`, a start bound 1.76 times the exact value at
   :math:`\beta=2.9\cdot10^{-16}`),
   :math:`\theta`, :math:`\varphi`, :math:`\sin\theta` and :math:`R` by a relative
   :math:`10^{-9}`, :math:`|\cos|` and :math:`\sin^2` lowered by :math:`10^{-12}(1+|x|)`.
   The eigenvalue is a choice (any gives a valid bound): per box, where the centre's start
   term plus its noise (both in closed form; the noise sum as two geometric series) is
   largest at the box's weakest interval, on grids in the angle and the eigenvalue refined
   three times; :data:`_CLOSED_ROUNDS` rounds (each at the then weakest interval) on the boxes
   whose bound is below the threshold. Checked in ``tests/tuning/test_certify_error.py``:
   both bounds against the recursions on a :math:`17\times17` grid of 60 random boxes
   (horizons up to 2500; tight to :math:`10^{-4}`), and the box bound per horizon against the
   dense oracle at :math:`L/\mu=10^5`, :math:`T\le1400`; mutants (the centre's value as the
   box's, x1.02, x1.05) caught.

8. **Start and noise bounded together** **[DERIVED]**. Steps 0-7 bound the start term and
   each noise term on the box separately and add the bounds; along the ridge of near-optimal
   :math:`(\alpha,\beta)` the start term falls where the noise grows, so the sum of the
   separate least values is below the least sum by the box's first-order variation of each
   (measured at :math:`L/\mu=10^3`, :math:`d=1`: the start term varies by :math:`\pm7\%` on
   the weakest leaf, relative width :math:`10^{-3}`, while the sum varies by a third of that).
   For one instance of step 0 at a fixed :math:`T`, :math:`F=w\,e_T(\lambda_1)^2+\sum_ik_i
   \alpha^2\Sigma^{(i)}` with :math:`k_i\ge0` and :math:`\Sigma^{(i)}=\sum_{j<T_0}h_j(
   \lambda^{(i)})^2`, write, for each :math:`f\in\{e_T,h_j\}` and :math:`x=c+\delta` in the
   box, :math:`f(x)=f(c)+g_f\cdot\delta+r_f`, :math:`g_f=(-\lambda Df,(D+B)f)` at the centre
   and :math:`|r_f|\le R_f`, :math:`R_f` step 6's spread :math:`\Delta_f` less its linear part
   (both of step 6's forms share it, so :math:`R_f\ge0`; its rounding pad included). Then
   :math:`f(x)^2=f(c)^2+2f(c)(g_f\cdot\delta+r_f)+(g_f\cdot\delta+r_f)^2\ge f(c)^2+2f(c)
   g_f\cdot\delta-2|f(c)|R_f`, so :math:`\Sigma(x)\ge\Sigma(c)+G_\Sigma\cdot\delta-
   \sum_j2|h_j(c)|R_{h_j}` and :math:`|\Sigma(x)-\Sigma(c)|\le V=\sum_j\Delta_j(2|h_j(c)|+
   \Delta_j)`; with :math:`\alpha^2=\alpha_c^2+(2\alpha_c\delta_\alpha+\delta_\alpha^2)`
   and :math:`\Sigma\ge0`, :math:`\alpha^2\Sigma(x)\ge\alpha_c^2(\Sigma(c)+G_\Sigma\cdot
   \delta-\sum_j2|h_j|R_{h_j})+2\alpha_c\delta_\alpha\Sigma(c)-(2\alpha_c|\delta_\alpha|+
   \delta_\alpha^2)V`. Summing, :math:`F(x)\ge F(c)+G_F\cdot\delta-\mathrm{Rem}` with the
   exact gradient :math:`G_F` at the centre, and on the box
   :math:`F\ge F(c)-|G_{F,\alpha}|\delta_\alpha-|G_{F,\beta}|\delta_\beta-\mathrm{Rem}`: the
   start and the noise trade inside :math:`G_F` and only second-order terms are lost. It is
   taken for the pairs of step 0 at :math:`\lambda_1` (:math:`k=\ell+\sigma` and
   :math:`k=\ell`, the other directions at step 2's :math:`\max_\lambda U`), for the noise
   alone (:math:`w=0`, a bound of :math:`U_{T_0}(\lambda_1)`), and for :math:`d\ge2` with the
   other directions' noise at :math:`\lambda^{(2)}\in\{\mu,L\}` (the end whose step-2 bound
   is larger) in the same sum
   (:math:`\max_\lambda U\ge U(\lambda^{(2)})`; at :math:`L/\mu=100`, :math:`m<n` that
   pairing of the start at :math:`\mu` with the noise at :math:`L` is what binds), the
   least over :math:`t\in[T_0,T_1]` of the start's part (the noise at :math:`T_0`, :math:`\ell`
   at the interval's least: each term is :math:`\ge0` and grows with :math:`T`). Three more
   changes make step 6 (and so 8) hold at long horizons and at the right eigenvalue:

   * where the whole box has complex roots at the eigenvalue (step 7's test),
     :math:`|h_j|=\beta^{j/2}|\sin((j+1)\theta)|/\sin\theta\le\rho^j/\sin\theta_{lo}`,
     whose :math:`k`-fold convolution is :math:`\rho^n\binom{n+k-1}{k-1}/\sin^k\theta_{lo}`;
     the smaller of it and :math:`C_k(n)` majorises :math:`h^{*k}_n` (:class:`_Majorants`):
     at :math:`n=150`, :math:`k=3`, :math:`\sin\theta_{lo}=0.9` it is :math:`4\cdot10^4`
     times below :math:`C_3`, so the remainders no longer swamp the start term near :math:`L`
     at :math:`T\approx200`;
   * where :math:`\lambda_1=\mu` (or :math:`L`), the start and noise bounds of steps 1, 1'
     and 2 hold at the same eigenvalue, and the larger of each pair is used (near critical
     damping at :math:`\mu` step 1's corner value is exact where Taylor's remainder is not);
   * a cell still below the threshold gets a second eigenvalue, the best at the centre outside
     a factor 2 of the first (:data:`_INSTANCE_SECOND`): the centre's value can peak at
     :math:`\mu`, where the bound is loose, while a peak near :math:`L` within 1% of it is
     bounded tightly.

   Step 7 is run for :data:`_CLOSED_ROUNDS` = 4 of a box's weakest intervals (was 2: at
   :math:`L/\mu=10^3` three to four single horizons sit within 1% of the threshold and the
   peaks near :math:`L` move with :math:`T`), the rounds after the second and the second
   eigenvalue only on boxes within :data:`_CLOSED_LATE_WITHIN` (2%) of the threshold, where
   they matter (elsewhere a box is cut anyway; leaving a bound out only weakens it); a later
   round searches its eigenvalue within 5% of the box's previous one (the peak near :math:`L`
   moves little from one horizon to the next; any eigenvalue gives a valid bound).
   Checked in ``tests/tuning/test_certify_error.py`` against the dense worst case per
   horizon on boxes near two optima, with mutants (the remainder left out of step 8; the
   complex-root majorant without its :math:`1/\sin^k`) that the check catches.

**Coverage.** :func:`certify_error_minimum` covers every :math:`\alpha>0`,
:math:`0\le\beta<1`, :math:`1\le T\le T_{\max}`: boxes in :math:`(\log\alpha,-\log(1-\beta))`
between :math:`\alpha_{\min}=10^{-3}/(\mu T_{\max}^2)` and :math:`4/L` and up to
:math:`1-\beta=10^{-3}/T_{\max}`, with the tail boxes :math:`[0,\alpha_{\min}]` and
:math:`[\beta_Y,1]` (the bounds above hold on the closed box with :math:`\beta_1=1`, the
polynomials being continuous there; a tail box is cut along its finite side only), and
:math:`\alpha\ge4/L` (4.). Horizons: single ones up to :data:`_T_SINGLE` and, given the
incumbent's horizon ``near``, from ``near`` :math:`/\sqrt2` to ``near`` :math:`\sqrt2` (at most
:data:`_WINDOW` of them; only for ``near`` up to :data:`_WINDOW_TMAX`),
elsewhere intervals of relative width at most
:math:`1/`:data:`_T_PER_OCTAVE_FRACTION` (any partition of :math:`1..T_{\max}` is valid; an
interval pairs the start term at :math:`T_1` with the noise at :math:`T_0`, which near the
optimum horizon cost Fig. 3 2.6%). Best first: the leaves with
the least bounds are cut in four (at most :data:`_SPLIT` a round) until every leaf reaches
the incumbent or the box budget (:data:`_MAX_BOXES`) is spent; the result is the least bound
of all leaves (and never above the incumbent).

**Slices** (a family that fixes a coefficient: gradient descent, :math:`\beta=0`; heavy ball
with a fixed momentum :math:`\bar\beta`, or a fixed step :math:`\bar\alpha`;
``certify_error_minimum(..., beta=...)`` or ``alpha=...``) **[DERIVED]**. Its least worst case
is the least :math:`W` over the slice :math:`\{\beta=\bar\beta\}` (or
:math:`\{\alpha=\bar\alpha\}`), :math:`T\le T_{\max}`, which can be far above heavy ball's
(at :math:`L/\mu=10^3` gradient descent's is 700 times it), so the bound over all of heavy ball
brackets it loosely. Steps 0-5 bound :math:`W` from below on a box
:math:`[\alpha_0,\alpha_1]\times[\beta_0,\beta_1]` from its ends only and nowhere need
:math:`\beta_0<\beta_1` (or :math:`\alpha_0<\alpha_1`): the degenerate box
:math:`[\alpha_0,\alpha_1]\times[\bar\beta,\bar\beta]` is a box, and every bound holds on
it (:math:`\beta_0=0` included: the grid above already starts at :math:`\beta=0`; the terms with
:math:`\beta_0^{j}`, :math:`\log\beta_0` read 0 or are left out, never a positive value). So
the branch and bound is run on such boxes, cut along the free side only, covering
:math:`\alpha\in[0,4/L]` (the tail :math:`[0,\alpha_{\min}]` included), and step 4 bounds
:math:`\alpha\ge4/L` (:math:`\alpha L\ge4\ge2(1+\bar\beta)`); a fixed
:math:`\bar\alpha\ge4/L` is settled by step 4 alone. For :math:`\beta=0` this *is* the interval
argument in :math:`\alpha`: :math:`p_T(\lambda)=(1-\alpha\lambda)^T`,
:math:`h_j=(1-\alpha\lambda)^j`, and :math:`|1-\alpha\lambda|` is monotone in :math:`\alpha` on
each side of :math:`1/\lambda`; so on :math:`[\alpha_0,\alpha_1]` the start term at :math:`\mu`
is at least :math:`w(\mu)(1-\alpha_1\mu)^{2T}` where :math:`\alpha_1\mu\le1` (step 1), at
:math:`L` at least :math:`w(L)(\alpha_0L-1)^{2T}` where :math:`\alpha_0L>1` (step 1', real roots),
and the noise :math:`\Sigma_k(\lambda)\ge\sum_{j<k}\min_\alpha|1-\alpha\lambda|^{2j}` (step 2,
real roots of one sign; :math:`\min=0` where :math:`1/\lambda\in[\alpha_0,\alpha_1]`), each
times the box's least :math:`\alpha^2\lambda/2`. For gradient descent the worst eigenvalues
of both terms are :math:`\mu` and :math:`L` (the start's :math:`|1-\alpha\lambda|` is largest at
an end; the noise :math:`U_\infty=\alpha/(2(2-\alpha\lambda))` grows with :math:`\lambda`),
which step 0 uses, so the bound closes on the least worst case as the boxes shrink. The
horizons are finer for a slice (single up to :data:`_SLICE_T_SINGLE`, then relative width
:math:`1/`:data:`_SLICE_FRACTION`): an interval pairs the start term at :math:`T_1` with the
noise at :math:`T_0`, and at the optimum of gradient descent (tuned :math:`T` where both terms
trade) intervals of width :math:`T/32` cost a few percent (measured: the bound 2.6% lower at
:math:`T_{\max}=1000` on the example of ``bench/gd_bracket.md``, 0.1% with the finer ones).
The incumbent only sets where cutting stops (and caps the result): the least bound over the
leaves is a lower bound whatever it is, so
:func:`~dpbounds.tuning._linear_error.proven_lower_bound` passes the tuned row's attained worst
case. Measured (``bench/gd_bracket.md``): the plug-in gradient descent's bracket (certified
upper end over this bound) 1.021 on six problems (:math:`L/\mu` 10 and :math:`10^3`,
:math:`\epsilon` 0.01-10, :math:`d` 1 and 100), of which 1.020 is the certified upper end's own
margin over the attained worst case; it was 1.87-715 with heavy ball's bound.

**Rounding.** :math:`p_{T_1}` at the corner is computed by the recursion in float64 with
:math:`a` rounded down (a point slightly beyond the corner, where step 1 still applies thanks
to the margin); where step 1 applies, :math:`0\le h_j\le j+1` and :math:`|e_t|\le1`, so each
step's rounding (at most :math:`3u` relative to 1, :math:`u=2^{-53}`) reaches :math:`p_{T_1}`
multiplied by at most :math:`T_1`: :math:`4u(T_1+1)^2` is subtracted. Likewise
:math:`H_{T_0}` (1'') loses :math:`u(T_0+1)^4/2` (each :math:`h_j\le j+1`, its rounding
:math:`O(uj^3)`). These are first-order estimates, not interval arithmetic. Every box bound is
finally multiplied by :math:`1-10^{-9}`.

**What it gives.** Before step 5, where the start term's worst eigenvalue oscillates through
zero within the horizon only the noise bounds remained, and the method-independent bound was
the larger on 5 of the 12 problems of ``bench/worst_case_bracket.md``. With steps 5, 5' and
step 2's complex tail and monotone Chebyshev terms, the tuned worst case is within 2.7-10.8%
of this bound on every problem there with :math:`L/\mu>1` (within 10% on 8 of 11; it was
3-50% with step 5 alone: :math:`L/\mu=10^3` at :math:`d=1` 50% -> 8.7%, :math:`m<n` 34% ->
4.2%; a dense brute force found no better point than the tuned one on those two, so the width
was the bound's); at :math:`L/\mu=1` the method-independent bound stays the larger. With
step 6 and the tuners' certified upper end refined near its maximiser
(``quadratic_worst_case(..., refine=16)``: within :math:`7.6\cdot10^{-5}` of the attained
worst case, where it was up to 2% above), the gaps there are 0.1-8.7% (they were
2.7-10.8%, measured at the same time under the same load): 0.1% at :math:`L/\mu=4` (the
branch and bound's stopping threshold, ``rtol``), 1.0% at :math:`L/\mu=10`,
:math:`\epsilon=0.01`, 0 at :math:`L/\mu=1`; where the weakest leaves sit at horizons of
tens to thousands step 6's remainder is too large and only the upper end's 2 points are
gained. The tune's CPU changed by -33% to +14%. With step 6's third-order form, its λ
chosen among three peaks, several intervals a box and single horizons around the tuned one
(``near``), the gaps are (``bench/worst_case_bracket.md``, 2026-12-03): issue 32's problem
3.6% -> 0.81%, Fig. 3 7.3% -> 0.92%, :math:`L/\mu=10` 1.0% / 2.5% -> 0.10% / 0.10%,
:math:`L/\mu=100` 8.4% -> 2.7% (:math:`m<n`: 1.9% -> 1.1%), :math:`L/\mu=10^3`, :math:`d=1`
6.7% -> 2.3%, :math:`L/\mu=10^4` (:math:`T^*=385`) 8.7% -> 3.8%; at :math:`L/\mu=10^5`
(:math:`T^*=1246`, no single horizons, step 6 not run above :data:`_INSTANCE_TMAX`) it stayed
at 8.2%. With step 7 and the window covering all of :math:`[T^*/\sqrt2,T^*\sqrt2]`
(``bench/worst_case_bracket.md``, 2026-12-03): issue 32's problem 0.81% -> 0.10%, Fig. 3
0.91% -> 0.10%, :math:`L/\mu=100` 2.7% -> 0.10%, :math:`L/\mu=10^4` 3.8% -> 0.10%,
:math:`L/\mu=10^5` 8.2% -> 0.30%, :math:`L/\mu=10^6` 0.66% -> 0.26% (0.10% is the stopping
threshold ``rtol``); :math:`L/\mu=10^3`, :math:`d=1` 2.3% -> 2.0% and :math:`m<n` 1.1% stay
where the box budget is spent on leaves still ~:math:`10^{-3}` wide. With step 8 and the
changes listed there, those two reach the stopping threshold: :math:`L/\mu=10^3`,
:math:`d=1` 2.0% -> 0.10%, :math:`m<n` 1.1% -> 0.10% (``bench/worst_case_bracket.md``). The
tuner reports the larger of the two bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpbounds.bounds.strongly_convex.heavy_ball_dp import log_chebyshev_envelope

__all__: list[str] = []

_T_SINGLE = 64          # horizons 1.._T_SINGLE are single intervals
_T_PER_OCTAVE_FRACTION = 32  # beyond, intervals [T0, T1] with T1 - T0 + 1 <= T0 / this
_MAX_BOXES = 16_000      # boxes one certification may create (bounded CPU: a wider bracket)
_SPLIT = 1024          # leaves cut per round (best first)
_CHUNK = 2048            # boxes per vectorised evaluation
_CHUNK_CELLS = 2 ** 20   # at most this many (box, horizon interval) cells per evaluation
#: a slice (one coefficient fixed, :func:`certify_error_minimum`): single horizons up to this,
#: then intervals of relative width at most 1 / _SLICE_FRACTION; and its box budget
_SLICE_T_SINGLE = 4096
_SLICE_FRACTION = 1024
_SLICE_MAX_BOXES = 4_000
#: at most this many single horizons around the incumbent's (``near``)
_WINDOW = 1024
_WINDOW_FACTOR = math.sqrt(2.0)
_WINDOW_TMAX = 4096  # no window beyond this incumbent horizon
_SAFETY = 1e-9           # relative margin on every box bound
_COND_MARGIN = 1e-12     # margin of the sign condition of step 1
_U = 2.0 ** -53
#: above this max_horizon the certification is not run (O(T_max) work per box)
MAX_CERT_HORIZON = 20_000


@dataclass(frozen=True)
class ErrorBracket:
    """``lower``: no ``(alpha > 0, 0 <= beta < 1, 1 <= T <= Tmax)`` has a worst case below it."""

    lower: float
    boxes: int
    #: the leaf that sets ``lower``: (alpha0, alpha1, beta0, beta1) (where the bound is weakest)
    at: tuple[float, float, float, float] = (math.nan,) * 4


def horizon_intervals(Tmax: int, single: int = _T_SINGLE,
                      fraction: int = _T_PER_OCTAVE_FRACTION,
                      window: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The intervals ``[lo, hi]`` of horizons that cover ``1..Tmax``: single horizons up to
    ``single`` and inside ``window`` (inclusive), elsewhere of relative width at most
    ``1 / fraction`` (an interval stops short of the window)."""
    wlo, whi = window if window is not None else (0, -1)
    lo: list[int] = []
    hi: list[int] = []
    t = 1
    while t <= Tmax:
        end = t
        if t > single and not wlo <= t <= whi:
            end = min(Tmax, t - 1 + max(1, t // fraction))
            if t < wlo <= end:
                end = wlo - 1
        lo.append(t)
        hi.append(end)
        t = end + 1
    return np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)


def horizon_window(near: int | None, Tmax: int) -> tuple[int, int] | None:
    """The horizons given single intervals around ``near`` (the incumbent's horizon): from
    ``near / sqrt 2`` to ``near * sqrt 2``, at most :data:`_WINDOW` of them (centred on
    ``near``); None without ``near`` or above :data:`_WINDOW_TMAX`."""
    if near is None or near > _WINDOW_TMAX:
        # (measured: L/mu = 1e4, T* = 385, gap 8.7% -> 3.8% for 2.3x the branch and bound's
        # CPU before step 7; at L/mu = 1e5, T* = 1246, the whole window [881, 1762] with
        # step 7 took the gap from 8.2% to 0.39%, a window of 256 only to 4.3%)
        return None
    near = min(max(int(near), 1), Tmax)
    lo = max(1, int(near / _WINDOW_FACTOR))
    hi = min(Tmax, int(math.ceil(near * _WINDOW_FACTOR)))
    if hi - lo + 1 > _WINDOW:
        lo, hi = max(1, near - _WINDOW // 2), min(Tmax, near + _WINDOW // 2 - 1)
    return lo, hi


@dataclass(frozen=True)
class _Problem:
    mu: float
    L: float
    d: int
    smp: float
    w_mu: float    # A_T(mu) = w_mu p_T(mu)^2
    w_L: float     # A_T(L) = w_L p_T(L)^2
    Tlo: np.ndarray
    Thi: np.ndarray
    ell: np.ndarray  # ell(Tlo): the least noise level of each interval
    gap_form: bool   # w(lambda) = initial_gap, else dist_sq * lambda / 2
    dist_sq: float
    #: the horizons k at which the noise bounds U_k are computed (step 2), and per interval
    #: the index of the largest k <= its T0 (U_k grows with k, so U at that k bounds U at T0
    #: from below): the intervals themselves where None; the window's single horizons share
    #: the coarse partition's k (the noise bounds cost most, and change slowly in k)
    Tk: np.ndarray | None = None
    kmap: np.ndarray | None = None


def _corner_residuals(a: np.ndarray, b: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``p_T`` of ``e_{t+1} = a e_t - b e_{t-1}`` (``e_0 = e_{-1} = 1``) at every ``T`` of
    ``ends`` (sorted), per row."""
    out = np.empty((a.size, ends.size))
    e, ep = np.ones_like(a), np.ones_like(a)
    j = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, int(ends[-1]) + 1):
            e, ep = a * e - b * ep, e
            while j < ends.size and ends[j] == t:
                out[:, j] = e
                j += 1
    return out


def _impulse_sums(a: np.ndarray, b: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``H_T = sum_{j<T} h_j`` of ``h_{j+1} = a h_j - b h_{j-1}`` (``h_0 = 1``, ``h_{-1} = 0``)
    at every ``T`` of ``ends`` (sorted), per row."""
    out = np.empty((a.size, ends.size))
    h, hp, H = np.ones_like(a), np.zeros_like(a), np.zeros_like(a)
    j = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, int(ends[-1]) + 1):
            H = H + h
            h, hp = a * h - b * hp, h
            while j < ends.size and ends[j] == t:
                out[:, j] = H
                j += 1
    return out


def _start_negative_lower(prob: _Problem, lam: float, al0, al1, b0, b1) -> np.ndarray:
    r"""Lower bound of :math:`A_T(\lambda)` from :math:`p_T\le1-\alpha_0\lambda H_{T_0}(a_{lo},
    \beta_1)<0` (step 1'' of the module docstring), boxes (rows) by intervals (columns)."""
    a_lo = np.nextafter(np.nextafter((1.0 + b0) - al1 * lam, -np.inf), -np.inf)
    C = np.cos(math.pi / prob.Thi.astype(float))[None, :]
    ok = a_lo[:, None] >= 2.0 * np.sqrt(b1)[:, None] * C + _COND_MARGIN
    H = _impulse_sums(a_lo, b1, prob.Tlo)
    err = 0.5 * _U * (prob.Tlo.astype(float) + 1.0) ** 4
    with np.errstate(invalid="ignore", over="ignore"):
        q = (al0 * lam)[:, None] * (H - err[None, :]) - 1.0
        q = np.where(ok & np.isfinite(q), np.maximum(q, 0.0), 0.0)
    w = prob.w_mu if prob.gap_form else 0.5 * lam * prob.dist_sq
    return w * q * q


def _sum_sq_lower(lam, al0, al1, b0, b1, k, lam_hi=None):
    r"""Lower bound of :math:`U_k(\lambda)` on each box (rows) at each ``k`` (columns): step 2.
    With ``lam_hi`` (per row), the bound holds at every :math:`\lambda` of
    ``[lam, lam_hi]`` (step 5: each bound of step 2 uses only the range of :math:`a`, which
    then spans :math:`[1+\beta_0-\alpha_1\lambda_{hi},1+\beta_1-\alpha_0\lambda_{lo}]`, and
    factors :math:`\lambda` and :math:`\alpha\lambda` that grow with :math:`\lambda`)."""
    al0, al1, b0, b1 = (v[:, None] for v in (al0, al1, b0, b1))
    lam_lo = np.asarray(lam, dtype=float)
    lam_lo = lam_lo[:, None] if lam_lo.ndim else lam_lo
    lam_up = lam_lo if lam_hi is None else np.asarray(lam_hi, dtype=float)[:, None]
    kf = k[None, :].astype(float)
    a_lo, a_hi = 1.0 + b0 - al1 * lam_up, 1.0 + b1 - al0 * lam_lo
    A = np.maximum(np.abs(a_lo), np.abs(a_hi))
    amin2 = np.where((a_lo <= 0) & (a_hi >= 0), 0.0, np.minimum(a_lo * a_lo, a_hi * a_hi))
    scale = 0.5 * lam_lo * al0 * al0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        u1 = scale * (1.0 + np.where(kf >= 2, amin2, 0.0))
        # stationary minus tail (stable boxes)
        stable = (al1 * lam_up < 2.0 * (1.0 + b0) * (1.0 - 1e-12)) & (b1 < 1.0)
        u_inf = al0 * (1.0 + b0) / (2.0 * (1.0 - b0) * (2.0 + 2.0 * b1 - al0 * lam_lo))
        rho = np.maximum(np.sqrt(b1), 0.5 * (A + np.sqrt(np.maximum(A * A - 4.0 * b0, 0.0))))
        lrho = np.log(rho)

        def log_h(kk):  # log of an upper bound of |h_kk| on the box
            geo = np.log(kk + 1.0) + kk * lrho
            cmax = np.where(b0 > 0, A / (2.0 * np.sqrt(b0)), np.inf)
            cheb = 0.5 * kk * np.log(b1) + log_chebyshev_envelope(cmax, kk + 1.0)
            cheb = np.where(np.isfinite(cmax) & ~np.isnan(cheb), cheb, np.inf)
            return np.where(kk < 0, -np.inf, np.minimum(geo, cheb))

        tail = np.exp(log_h(kf)) + b1 * np.exp(log_h(kf - 1.0))
        u2 = np.where(stable & (u_inf > 0), u_inf * np.maximum(1.0 - tail * tail, 0.0), 0.0)
        u2 = np.where(np.isnan(u2), 0.0, u2)
        # complex roots on the whole box
        cplx = (b0 > 0) & (A * A < 4.0 * b0 * (1.0 - 1e-12))
        sin_lo = np.sqrt(np.maximum(1.0 - A * A / (4.0 * b0), 0.0))
        sin2_hi = np.maximum(1.0 - amin2 / (4.0 * b1), 1e-300)
        geo = np.where(b0 > 0, -np.expm1(kf * np.log(b0)) / (1.0 - b0), kf)
        s3 = np.maximum(0.5 * geo - 0.5 / (np.sqrt(b0) * sin_lo), 0.0) / sin2_hi
        u3 = np.where(cplx & np.isfinite(s3), scale * s3, 0.0)
        # real roots of one sign on the whole box: |h_j| >= rho^j, rho the larger |root|
        amin = np.sqrt(amin2)
        real = (amin2 >= 4.0 * b1 * (1.0 + 1e-12)) & ((a_lo > 0) | (a_hi < 0))
        rho_lo = 0.5 * (amin + np.sqrt(np.maximum(amin2 - 4.0 * b1, 0.0)))
        r2 = rho_lo * rho_lo
        s4 = np.where(r2 < 1.0, -np.expm1(kf * np.log(r2)) / (1.0 - r2), kf)
        u4 = np.where(real & np.isfinite(s4), scale * s4, 0.0)
        # every box: the invariant h_j^2 - a h_j h_{j-1} + beta h_{j-1}^2 = beta^j
        s5 = np.where(b0 < 1.0, -np.expm1((kf - 1.0) * np.log(b0)) / (1.0 - b0),
                      kf - 1.0) * b0 / (2.0 + A)
        u5 = np.where(np.isfinite(s5) & (kf >= 2), scale * s5, 0.0)
        # roots of one sign or complex with k theta <= pi / 2 on the whole box:
        # |h_j| >= (2 / pi) (j + 1) beta^(j / 2) for j < k
        near = (((a_lo > 0) | (a_hi < 0))
                & (amin >= 2.0 * np.sqrt(b1) * np.cos(0.5 * math.pi / kf) * (1.0 + 1e-12)))
        s6 = (4.0 / math.pi ** 2) * np.exp((kf - 1.0) * np.log(b0)) * (
            kf * (kf + 1.0) * (2.0 * kf + 1.0) / 6.0)
        u6 = np.where(near & np.isfinite(s6), scale * s6, 0.0)
        # complex roots on the whole box: the stationary value minus a bound of the tail
        u7 = np.where(cplx & stable, _complex_tail_lower(u_inf, lam_up, al1, b0, b1, sin_lo, kf),
                      0.0)
        # a of one sign: every h_j^2 >= beta_0^j U_j(c_lo)^2 while U_j is increasing there
        one_sign = ((a_lo > 0) | (a_hi < 0)) & (b1 > 0)
        c_lo = np.where(one_sign, np.sqrt(amin2) / (2.0 * np.sqrt(b1)), 0.0)
        u8 = scale * _monotone_chebyshev_sums(c_lo, b0, k) if lam_hi is None else 0.0
        u = np.maximum(np.maximum(np.maximum(u1, u2), np.maximum(u3, u4)),
                       np.maximum(np.maximum(u5, u6), np.maximum(u7, u8)))
    # the partial sum grows with k: a bound at k holds at every later k
    return np.maximum.accumulate(u, axis=1)


def _monotone_chebyshev_sums(c_lo, b0, k) -> np.ndarray:
    r"""Step 2, monotone Chebyshev terms: :math:`\sum_{j<\min(k,J)}\beta_0^jU_j(c_{lo})^2` per
    box (rows of ``c_lo``, ``b0``: columns of one) at each ``k`` (sorted), with
    :math:`J=\lfloor\pi/\arccos c_{lo}\rfloor` (all :math:`j` where :math:`c_{lo}\ge1`), 0
    where :math:`c_{lo}\le0`; computed as the impulse response of :math:`a'=2\sqrt{\beta_0}
    c_{lo}`, :math:`\beta'=\beta_0` (nonnegative for :math:`j<J`), less :math:`4u(k+1)^2` of
    itself for rounding, and cut short (a lower bound still) once every row is past its
    :math:`J` or its terms are below :math:`10^{-9}` of its sum."""
    c = np.ravel(c_lo)
    b = np.ravel(np.broadcast_to(b0, np.shape(c_lo)))
    kk = np.asarray(k, dtype=np.int64).ravel()
    out = np.zeros((c.size, kk.size))
    ok = c > 0
    if not np.any(ok) or kk.size == 0:
        return out
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        J = np.where(c >= 1.0, np.inf,
                     np.floor(math.pi / (np.arccos(np.clip(c, -1.0, 1.0)) * (1.0 + 1e-12))))
        J = np.where(ok, J, 0.0)
        a2 = 2.0 * np.sqrt(b) * c
        h, hp, acc = np.ones_like(c), np.zeros_like(c), np.zeros_like(c)
        col = 0
        jmax = int(kk[-1])
        for j in range(jmax):
            while col < kk.size and kk[col] <= j:  # the sum over j' < k = kk[col]
                out[:, col] = acc
                col += 1
            acc = acc + np.where(j < J, h * h, 0.0)
            h, hp = a2 * h - b * hp, h
            # the terms are nonnegative: stopping early (all rows past J, or their terms below
            # 1e-9 of the sum) only lowers the bound
            if j % 16 == 15 and not np.any((j + 1 < J) & (h * h > 1e-9 * acc)):
                break
        while col < kk.size:
            out[:, col] = acc
            col += 1
    out = out * (1.0 - 4.0 * _U * (kk[None, :].astype(float) + 1.0) ** 2)
    return np.where(np.isfinite(out) & (out > 0), out, 0.0)


def _complex_tail_lower(u_inf, lam_up, al1, b0, b1, sin_lo, kf):
    r"""Step 2, stationary minus the tail of complex roots: :math:`U_k\ge\frac\lambda2\alpha^2
    \Sigma_\infty-\frac{\lambda_{hi}}2\alpha_1^2\frac{\beta_1^k}{2\sin^2\theta}\big(
    \frac1{1-\beta_1}+\frac1{|1-\beta e^{2i\theta}|}\big)` (``u_inf`` the lower bound of the
    first term, ``sin_lo`` of :math:`\sin\theta`; boxes with complex roots throughout), 0 where
    that is not positive."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        z_lo = np.sqrt((1.0 - b1) ** 2 + 4.0 * b0 * sin_lo * sin_lo)
        tail = (np.exp(kf * np.log(b1)) / (2.0 * sin_lo * sin_lo)
                * (1.0 / (1.0 - b1) + 1.0 / z_lo))
        u7 = u_inf - 0.5 * lam_up * al1 * al1 * tail
    return np.where(np.isfinite(u7) & (u7 > 0), u7, 0.0)


def _start_at_L_lower(prob: _Problem, al0, b0, b1) -> np.ndarray:
    r"""Lower bound of :math:`A_T(L)` on each box (rows) and horizon interval (columns):
    step 1' of the module docstring."""
    L = prob.L
    a_hi = (1.0 + b1 - al0 * L)[:, None]
    T0, T1 = prob.Tlo[None, :].astype(float), prob.Thi[None, :].astype(float)
    ok = (a_hi < 0) & (-a_hi >= 2.0 * np.sqrt(b1)[:, None] * np.cos(0.5 * math.pi / (T1 + 1.0))
                       * (1.0 + 1e-12))
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        f = (2.0 / math.pi) * np.exp(0.5 * T1 * np.log(b0)[:, None]) * (T0 + 1.0)
    f = np.where(ok & np.isfinite(f), f, 0.0)
    # real roots on the whole box (min a^2 >= 4 beta_1, a < 0): |p_T(L)| >= h+_T >= rho_lo^T,
    # rho_lo the least larger root; on [T0, T1] at T1 (rho_lo <= 1) or T0 (rho_lo > 1)
    amin = -a_hi
    real = (a_hi < 0) & (amin * amin >= 4.0 * b1[:, None] * (1.0 + 1e-12))
    with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
        rho = 0.5 * (amin + np.sqrt(np.maximum(amin * amin - 4.0 * b1[:, None], 0.0)))
        rho = rho * (1.0 - 1e-12)  # rounding of a and of the root
        g = np.exp(np.where(rho <= 1.0, T1, T0) * np.log(rho))
    f = np.maximum(f, np.where(real & np.isfinite(g), g, 0.0))
    # unstable on the whole box (step 4): |p_T(L)| >= 1
    f = np.where((al0 * L >= 2.0 * (1.0 + b1))[:, None], np.maximum(f, 1.0), f)
    f = np.minimum(f, 1e150)  # lowering a lower bound: no overflow of f^2
    with np.errstate(over="ignore"):  # past the float range: +inf, clipped in _box_lower
        return prob.w_L * f * f


def _oscillating_interval(prob: _Problem, al0, al1, b0) -> tuple[np.ndarray, np.ndarray]:
    r"""The eigenvalues :math:`[\lambda_a,\lambda_b]\subset[\mu,L]` where every point of each
    box (row) has complex (or double) characteristic roots: step 5 of the module docstring.
    Empty (``lam_a >= lam_b``) where there are none."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s0 = np.sqrt(b0)
        lam_a = np.maximum(prob.mu, (1.0 - s0) ** 2 / al0)
        lam_b = np.minimum(prob.L, (1.0 + s0) ** 2 / al1)
    lam_a = np.where(np.isfinite(lam_a), lam_a, np.inf)
    return lam_a, lam_b


#: pieces of the oscillating interval step 5 tries: the whole, and those of relative length
#: 4^-k at either end (where the mode is near critical damping, the amplitude is large)
_OSC_PIECES = tuple([(0.0, 1.0)] + [(0.0, 4.0 ** -k) for k in range(1, 7)]
                    + [(1.0 - 4.0 ** -k, 1.0) for k in range(1, 7)])


def _start_oscillating_lower(prob: _Problem, al0, al1, b0, b1, lam_a, lam_b) -> np.ndarray:
    r"""Lower bound of :math:`\max_{\lambda\in[\lambda_a,\lambda_b]}A_T(\lambda)` on each box
    (rows) and horizon interval (columns) from the sweep of the phase (step 5 of the module
    docstring), the largest over the pieces :data:`_OSC_PIECES` of the interval."""
    out = np.zeros((al0.size, prob.Tlo.size))
    for bound, _, _ in _oscillating_pieces(prob, al0, al1, b0, b1, lam_a, lam_b):
        out = np.maximum(out, bound)
    return out


def _oscillating_pieces(prob: _Problem, al0, al1, b0, b1, lam_a, lam_b) -> list:
    r"""Per piece ``[lo, hi]`` of :data:`_OSC_PIECES` (``lo``, ``hi`` per box): the lower bound
    of :math:`A_T(\lambda^*)` (boxes by horizon intervals) at some :math:`\lambda^*` of the
    piece (step 5 of the module docstring), as ``(bound, lo, hi)``."""
    T0, T1 = prob.Tlo[None, :].astype(float), prob.Thi[None, :].astype(float)
    s0, s1 = np.sqrt(b0), np.sqrt(b1)
    out: list = []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        decay = np.exp(T1 * np.log(b0)[:, None])  # beta^T >= beta_0^T1
        width = lam_b - lam_a
        for f0, f1 in _OSC_PIECES:
            lo, hi = lam_a + f0 * width, lam_a + f1 * width
            # least change of cos(theta) = a / (2 sqrt(beta)) across [lo, hi] at any point of
            # the box, and the range [c_lo, c_hi] of cos(theta) on the box and piece
            D = al0 * (hi - lo) / (2.0 * s1)
            n_lo, n_hi = 1.0 + b0 - al1 * hi, 1.0 + b1 - al0 * lo
            c_hi = np.clip(np.where(n_hi >= 0, n_hi / (2.0 * s0), n_hi / (2.0 * s1)), -1, 1)
            c_lo = np.clip(np.where(n_lo >= 0, n_lo / (2.0 * s1), n_lo / (2.0 * s0)), -1, 1)
            D = np.where((hi > lo) & np.isfinite(D), np.minimum(D, c_hi - c_lo), 0.0)
            # least change of theta = arccos: the interval of length D in [c_lo, c_hi] nearest
            # 0 (arccos' is least in size at 0)
            mid = np.clip(0.0, c_lo + 0.5 * D, c_hi - 0.5 * D)
            dtheta = (np.arccos(np.clip(mid - 0.5 * D, -1, 1))
                      - np.arccos(np.clip(mid + 0.5 * D, -1, 1))) * (1.0 - 1e-12)
            # the phase T theta - arctan(B) grows by at least T dtheta (B falls in theta)
            sweep = T0 * dtheta[:, None]
            factor = np.where(sweep > 0.0, np.sin(0.5 * np.minimum(sweep, math.pi)) ** 2, 0.0)
            # amplitude^2 = beta^T alpha lambda / sin^2 theta, sin^2 theta <= 1 - min cos^2
            cmin2 = np.where((c_lo <= 0) & (c_hi >= 0), 0.0, np.minimum(c_lo ** 2, c_hi ** 2))
            r2 = np.maximum(1.0, al0 * lo / np.maximum(1.0 - cmin2, 1e-300))
            w = prob.w_mu if prob.gap_form else 0.5 * prob.dist_sq * lo[:, None]
            bound = w * decay * (r2 * (1.0 - 1e-12))[:, None] * factor
            out.append((np.where(np.isfinite(bound), bound, 0.0), lo, hi))
    return out


#: step 7: the closed form at one eigenvalue (per box), chosen at the centre's weakest horizon
_CLOSED_GRID = 64
_CLOSED_ROUNDS = 4  # each round: one eigenvalue per box, at its weakest interval (0: off)
_CLOSED_LOCAL = 16
_CLOSED_LATE_WITHIN = 1.02  # rounds after the second: boxes within this factor of the threshold
_CLOSED_PAD = 1e-9  # relative widening of the ranges of theta and phi (rounding)


def _cos_pad(al1, lam, s0):
    r"""Step 7: an absolute bound of the rounding error of :math:`c=((1+\beta)-\alpha\lambda)/
    (2\sqrt\beta)` as computed on the box (``s0`` :math:`=\sqrt{\beta_0}`) **[DERIVED]**: the
    numerator's error is at most :math:`u(1+\beta+\alpha\lambda+|1+\beta-\alpha\lambda|)`
    (each operation one rounding), divided by :math:`2\sqrt\beta\ge2\sqrt{\beta_0}`, plus
    :math:`3u|c|` for the square root and the division, with :math:`|c|\le1` where it matters
    (the same for :math:`\sqrt{1-\alpha_s\lambda}`: its argument is near :math:`\beta_0`).
    For small :math:`\beta` this is far above :math:`8u`: the cancellation in the numerator
    (:math:`\alpha\lambda\approx1`) divided by :math:`2\sqrt\beta` (measured before:
    :math:`\beta=2.9\cdot10^{-16}` gave a start bound 1.76 times the exact value)."""
    return 8.0 * _U * (1.0 + (2.0 + al1 * lam) / (2.0 * s0))


def _closed_form_theta_phi(lam, al0, al1, b0, b1):
    r"""Step 7: per box (``lam`` per box), where every point of the box has complex roots at
    ``lam``: the ranges :math:`[\theta_{lo},\theta_{hi}]` of the angle, :math:`[\varphi_{lo},
    \varphi_{hi}]` of the phase and the least amplitude :math:`R`; ``ok`` False elsewhere."""
    s0, s1 = np.sqrt(b0), np.sqrt(b1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ok = ((lam > (1.0 - s0) ** 2 / al0 * (1.0 + 1e-12))
              & (lam < (1.0 + s0) ** 2 / al1 * (1.0 - 1e-12)) & (b0 > 0.0) & (b1 < 1.0))

        def c(al, b):
            return ((1.0 + b) - al * lam) / (2.0 * np.sqrt(b))
        # c = cos(theta) falls with alpha; in beta its slope has the sign of beta - 1 +
        # alpha lam (a minimum sqrt(1 - alpha lam) at beta = 1 - alpha lam)
        c_hi = np.maximum(c(al0, b0), c(al0, b1))
        c_lo = np.minimum(c(al1, b0), c(al1, b1))
        a_s = np.minimum(al1, (1.0 - b0) / lam)
        inside = np.maximum(al0, (1.0 - b1) / lam) <= a_s
        c_lo = np.where(inside, np.minimum(c_lo, np.sqrt(np.maximum(1.0 - a_s * lam, 0.0))),
                        c_lo)
        pad = _cos_pad(al1, lam, s0)
        c_lo, c_hi = np.clip(c_lo - pad, -1.0, 1.0), np.clip(c_hi + pad, -1.0, 1.0)
        th_lo = np.arccos(c_hi) * (1.0 - _CLOSED_PAD)
        th_hi = np.minimum(np.arccos(c_lo) * (1.0 + _CLOSED_PAD), math.pi)
        ok &= th_lo > 0.0
        # sin(theta) on [th_lo, th_hi] (in (0, pi))
        sn_lo = np.minimum(np.sin(th_lo), np.sin(th_hi))
        sn_hi = np.where((th_lo <= 0.5 * math.pi) & (th_hi >= 0.5 * math.pi), 1.0,
                         np.maximum(np.sin(th_lo), np.sin(th_hi)))
        sn_lo, sn_hi = sn_lo * (1.0 - _CLOSED_PAD), sn_hi * (1.0 + _CLOSED_PAD)
        ok &= sn_lo > 0.0
        # B = (cos theta - sqrt beta) / sin theta, by interval arithmetic
        n_lo, n_hi = c_lo - s1 - pad, c_hi - s0 + pad
        B_lo = np.where(n_lo >= 0.0, n_lo / sn_hi, n_lo / sn_lo)
        B_hi = np.where(n_hi >= 0.0, n_hi / sn_lo, n_hi / sn_hi)
        ph_lo = np.arctan(B_lo) - _CLOSED_PAD
        ph_hi = np.arctan(B_hi) + _CLOSED_PAD
        Bmin = np.where((B_lo <= 0.0) & (B_hi >= 0.0), 0.0,
                        np.minimum(np.abs(B_lo), np.abs(B_hi)))
        # R^2 = 1 + B^2 = alpha lam / sin^2 theta: the larger of the two lower bounds
        R = np.sqrt(np.maximum(1.0 + Bmin * Bmin, al0 * lam / (sn_hi * sn_hi)))
        R = R * (1.0 - _CLOSED_PAD)
    ok &= np.isfinite(R) & np.isfinite(ph_lo) & np.isfinite(ph_hi)
    return ok, th_lo, th_hi, ph_lo, ph_hi, R


def _closed_form_start(prob: _Problem, lam, al0, al1, b0, b1, T0, T1) -> np.ndarray:
    r"""Step 7: lower bound of :math:`A_T(\lambda)` for every :math:`T\in[T_0,T_1]` on each box
    (rows; ``lam`` per row) and interval (columns, ``T0``/``T1``), from
    :math:`p_t=\beta^{t/2}R\cos(t\theta-\varphi)`: 0 where a box has real roots at ``lam``."""
    ok, th_lo, th_hi, ph_lo, ph_hi, R = (v[:, None] if np.ndim(v) else v for v in
                                         _closed_form_theta_phi(lam, al0, al1, b0, b1))
    T0, T1 = T0[None, :].astype(float), T1[None, :].astype(float)
    with np.errstate(invalid="ignore", over="ignore", under="ignore", divide="ignore"):
        psi_lo, psi_hi = T0 * th_lo - ph_hi, T1 * th_hi - ph_lo
        # the least |cos| over [psi_lo, psi_hi]: 0 if a zero pi/2 + k pi lies in it
        k = np.ceil((psi_lo - 0.5 * math.pi) / math.pi)
        zero = 0.5 * math.pi + k * math.pi <= psi_hi
        mc = np.where(zero, 0.0, np.minimum(np.abs(np.cos(psi_lo)), np.abs(np.cos(psi_hi))))
        mc = np.maximum(mc - 1e-12 * (1.0 + np.abs(psi_hi)), 0.0)  # cos of a rounded angle
        decay = np.exp(0.5 * T1 * np.log(b0)[:, None]) * (1.0 - 1e-12 * T1)  # beta^(t/2)
        p = decay * R * mc
    w = prob.w_mu if prob.gap_form else 0.5 * prob.dist_sq * np.asarray(lam)[:, None]
    out = w * p * p
    return np.where(ok & np.isfinite(out), out, 0.0)


def _closed_form_sum_sq(lam, al0, al1, b0, b1, k) -> np.ndarray:
    r"""Step 7: lower bound of :math:`U_k(\lambda)=\frac\lambda2\alpha^2\sum_{j<k}h_j^2` on each
    box (rows; ``lam`` per row) at each ``k`` (columns), from
    :math:`h_j=\beta^{j/2}\sin((j+1)\theta)/\sin\theta`: 0 where a box has real roots."""
    ok, th_lo, th_hi, _, _, _ = _closed_form_theta_phi(lam, al0, al1, b0, b1)
    K = int(np.max(k)) if np.size(k) else 0
    j = np.arange(K, dtype=float)[None, :]
    with np.errstate(invalid="ignore", over="ignore", under="ignore", divide="ignore"):
        sn_hi = np.where((th_lo <= 0.5 * math.pi) & (th_hi >= 0.5 * math.pi), 1.0,
                         np.maximum(np.sin(th_lo), np.sin(th_hi))) * (1.0 + _CLOSED_PAD)
        x_lo, x_hi = (j + 1.0) * th_lo[:, None], (j + 1.0) * th_hi[:, None]
        # the least sin^2 over [x_lo, x_hi]: 0 if a zero k pi lies in it
        zero = np.ceil(x_lo / math.pi) * math.pi <= x_hi
        ms = np.where(zero, 0.0, np.minimum(np.sin(x_lo) ** 2, np.sin(x_hi) ** 2))
        ms = np.maximum(ms - 1e-12 * (1.0 + x_hi), 0.0)
        terms = np.exp(j * np.log(b0)[:, None]) * (1.0 - 1e-12 * (j + 1.0)) * ms
        csum = np.concatenate([np.zeros((terms.shape[0], 1)), np.cumsum(terms, axis=1)],
                              axis=1) * (1.0 - 1e-12)
        U = (0.5 * lam * al0 * al0 / (sn_hi * sn_hi))[:, None] * csum[:, np.asarray(k)]
    return np.where(ok[:, None] & np.isfinite(U), U, 0.0)


def _closed_form_lambda(prob: _Problem, al0, al1, b0, b1, T, ell,
                       around: np.ndarray | None = None) -> np.ndarray:
    r"""Step 7's eigenvalue per box: where the centre's start term at horizon ``T`` plus its
    noise at variance ``ell + smp`` (both per box, in closed form) is largest among the
    eigenvalues at which the whole box has complex roots (grids in the angle and in the
    eigenvalue, each point also moved to the start term's nearest peak, the best refined three
    times); ``nan`` where there are none. ``around`` (per box): search only within 5% of
    these eigenvalues (a later round's, near an earlier choice: a fifth of the cost). A choice
    only: any eigenvalue gives a valid bound."""
    ac, bc = 0.5 * (al0 + al1), 0.5 * (b0 + b1)
    lam_a, lam_b = _oscillating_interval(prob, al0, al1, b0)
    Tf = np.asarray(T, dtype=float)[:, None]
    var = (np.asarray(ell, dtype=float) + prob.smp)[:, None]
    rows = np.arange(al0.size)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        sb = np.sqrt(bc)[:, None]
        u = np.linspace(0.0, 1.0, _CLOSED_GRID)[None, :]
        # angles from 0.05 / T to the angle at lam_b (geometric) as eigenvalues at the
        # centre, eigenvalues (geometric and uniform) and both ends
        th_b = np.arccos(np.clip(((1.0 + bc) - ac * lam_b) / (2.0 * np.sqrt(bc)), -1.0, 1.0))
        th_0 = np.minimum(0.05 / Tf, th_b[:, None])
        th = np.exp(np.log(th_0) + u * (np.log(th_b)[:, None] - np.log(th_0)))
        lam_th = ((1.0 + bc)[:, None] - 2.0 * sb * np.cos(th)) / ac[:, None]
        lam_g = np.exp(np.log(lam_a)[:, None] + u * np.log(lam_b / lam_a)[:, None])
        lam_u = lam_a[:, None] + u * (lam_b - lam_a)[:, None]
        grid = np.concatenate([lam_a[:, None], lam_th, lam_g, lam_u, lam_b[:, None]], axis=1)
        if around is not None:
            grid = np.asarray(around, dtype=float)[:, None] * (
                1.0 + 0.05 * np.linspace(-1.0, 1.0, _CLOSED_LOCAL + 1))[None, :]
        grid = np.clip(grid, lam_a[:, None], lam_b[:, None])

        def value(lam):
            a = (1.0 + bc)[:, None] - ac[:, None] * lam
            cs = np.clip(a / (2.0 * sb), -1.0, 1.0)
            thv = np.arccos(cs)
            sn = np.sin(thv)
            B = (cs - sb) / sn
            r2T = bc[:, None] ** Tf
            start = r2T * (1.0 + B * B) * np.cos(Tf * thv - np.arctan(B)) ** 2
            # sum_{j<T} r^2j sin^2((j+1) theta) = (S0 - Re(e^{2i theta}(1 - q^T)/(1 - q))) / 2,
            # q = r^2 e^{2i theta}; in real arithmetic (a complex power costs several times
            # more): numerator e^{2i theta} - r^2T e^{2i(T+1) theta}, denominator
            # 1 - r^2 e^{2i theta}
            c2, s2 = 2.0 * cs * cs - 1.0, 2.0 * sn * cs
            ang = 2.0 * (Tf + 1.0) * thv
            nr, ni = c2 - r2T * np.cos(ang), s2 - r2T * np.sin(ang)
            dr, di = 1.0 - bc[:, None] * c2, -bc[:, None] * s2
            S0 = (1.0 - r2T) / (1.0 - bc[:, None])
            S = 0.5 * (S0 - (nr * dr + ni * di) / (dr * dr + di * di))
            U = 0.5 * lam * ac[:, None] ** 2 * S / sn ** 2
            w = prob.w_mu if prob.gap_form else 0.5 * prob.dist_sq * lam
            v = w * start + var * U
            return np.where(np.isfinite(v), v, -np.inf)

        def refine(grid):
            for _ in range(3):
                srt = np.sort(grid, axis=1)
                j = np.argmax(value(srt), axis=1)
                lo = srt[rows, np.maximum(j - 1, 0)]
                hi = srt[rows, np.minimum(j + 1, srt.shape[1] - 1)]
                grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0,
                                                                      _CLOSED_LOCAL)[None, :]
                grid = np.concatenate([srt[rows, j][:, None], grid], axis=1)
            return grid[rows, np.argmax(value(grid), axis=1)]

        # each grid point also moved to the start term's nearest peak (where the phase
        # T theta - arctan B is a multiple of pi; the grids miss such peaks where the phase
        # turns fast, e.g. near L), then the best refined
        th = np.arccos(np.clip(((1.0 + bc)[:, None] - ac[:, None] * grid) / (2.0 * sb),
                               -1.0, 1.0))
        n = None
        for _ in range(2):  # theta = (n pi + arctan B(theta)) / T: B varies slowly
            B = (np.cos(th) - sb) / np.sin(th)
            n = np.round((Tf * th - np.arctan(B)) / math.pi) if n is None else n
            th = np.clip((n * math.pi + np.arctan(B)) / Tf, 1e-300, math.pi)
        peaks = ((1.0 + bc)[:, None] - 2.0 * sb * np.cos(th)) / ac[:, None]
        peaks = np.where(np.isfinite(peaks), peaks, grid)
        grid = np.concatenate([grid, np.clip(peaks, lam_a[:, None], lam_b[:, None])], axis=1)
        lam1 = refine(grid)
        found = np.isfinite(value(lam1[:, None])[:, 0]) & (lam_a < lam_b)
    return np.where(found, lam1, np.nan)

#: step 6: eigenvalues of the grid at the box's centre, and points between the best one's
#: neighbours; and the longest horizon it is run at (its remainder grows like T^5)
_INSTANCE_GRID = 33
_INSTANCE_ROUNDS = 2
_INSTANCE_WITHIN = 1.3  # run where the bound is within this factor of the threshold
_INSTANCE_LOCAL = 8
_INSTANCE_PEAKS = 3
_INSTANCE_PER_ROUND = 4  # a box's weakest intervals taken per round
_INSTANCE_CAP = True  # False: step 6 at every eligible interval (the tests' full check)
_INSTANCE_TMAX = 256
_JOINT = True  # step 8 (False: off, the tests' comparison)
_INSTANCE_SECOND = True  # step 6 again at a second eigenvalue where a cell stays low


def _conv_majorant(rho, k: int, n):
    r""":math:`\rho^n\binom{n+2k-1}{2k-1}` (0 for :math:`n<0`): the :math:`k`-fold convolution of
    :math:`H_j=(j+1)\rho^j`, a majorant of :math:`|h_j|` on the box (step 6)."""
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        poly = np.ones_like(n * rho)
        for i in range(1, 2 * k):
            poly = poly * (n + i) / i
        out = poly * np.exp(np.maximum(n, 0.0) * np.log(rho))
    return np.where(n >= 0, out, 0.0)


def _taylor_spread(lam1, da, db, v_a, v_b, m_aa, m_ab, m_bb):
    r"""Step 6: the bound of :math:`|f(x)-f(c)|` on the box (half-widths ``da``, ``db``) from
    :math:`Df` (``v_a``) and :math:`Bf` (``v_b``) at the centre and the majorants ``m_..`` of the
    second derivatives in :math:`(a,\beta)` on the box."""
    lin = lam1 * np.abs(v_a) * da + np.abs(v_a + v_b) * db
    rem = 0.5 * (lam1 * lam1 * m_aa * da * da + 2.0 * lam1 * (m_aa + m_ab) * da * db
                 + (m_aa + 2.0 * m_ab + m_bb) * db * db)
    return lin + rem


def _taylor3_spread(lam1, da, db, v_a, v_b, s_aa, s_ab, s_bb, m3):
    r"""Step 6, third order: the bound of :math:`|f(x)-f(c)|` on the box from the first
    (``v_a``, ``v_b``) and second (``s_aa`` = :math:`D^2f`, ``s_ab`` = :math:`DBf`, ``s_bb`` =
    :math:`B^2f`, each already raised by its rounding margin) derivatives **at the centre** and
    the majorants ``m3`` = (:math:`M_{30},M_{21},M_{12},M_{03}`) of the third derivatives
    :math:`D^pB^qf` on the box."""
    lin = lam1 * np.abs(v_a) * da + np.abs(v_a + v_b) * db
    quad = 0.5 * (lam1 * lam1 * np.abs(s_aa) * da * da
                  + 2.0 * lam1 * np.abs(s_aa + s_ab) * da * db
                  + np.abs(s_aa + 2.0 * s_ab + s_bb) * db * db)
    A = lam1 * da + db  # |delta a| on the box
    m30, m21, m12, m03 = m3
    cub = (m30 * A ** 3 + 3.0 * m21 * A * A * db + 3.0 * m12 * A * db * db
           + m03 * db ** 3) / 6.0
    return lin + quad + cub


def _instance_cells(prob: _Problem, al0, al1, b0, b1, cells_r, cells_c,
                    lam_out: list | None = None,
                    joint_out: list | None = None,
                    avoid: np.ndarray | None = None,
                    lam2: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Step 6: per cell (box ``cells_r``, horizon interval ``cells_c``), lower bounds of
    :math:`A_T(\lambda_1)` (every :math:`T` of the interval) and of :math:`U_{T_0}(\lambda_1)`
    on the box, at one eigenvalue :math:`\lambda_1` chosen at the box's centre (appended to
    ``lam_out`` when given). With ``joint_out``, step 8's lower bounds of
    :math:`A_T(\lambda_1)+kU_T(\lambda_1)` on the box (every :math:`T` of the interval) for
    :math:`k=\ell+\sigma` and :math:`k=\ell` and of :math:`U_{T_0}(\lambda_1)` alone are
    appended to it (three arrays). ``avoid`` (per cell, ``nan``: none): an eigenvalue whose
    neighbourhood (within a factor 2) :math:`\lambda_1` is not taken from (a second choice).
    ``lam2`` (per cell; :math:`d\ge2`): the eigenvalue of the other directions' noise in step
    8's sums (two more arrays appended; without it, none)."""
    mu, L = prob.mu, prob.L
    # cells by decreasing horizon interval (the intervals are disjoint, so T0 and T1 fall
    # together): the cells still running at step t are a prefix, those inside their interval
    # a block of it
    order = np.argsort(-prob.Thi[cells_c], kind="stable")
    cells_r, cells_c = np.asarray(cells_r)[order], np.asarray(cells_c)[order]
    T0 = prob.Tlo[cells_c].astype(np.int64)
    T1 = prob.Thi[cells_c].astype(np.int64)
    ell = prob.ell[cells_c]
    far = None
    if avoid is not None:  # log-distance from the eigenvalue to avoid (inf: none)
        av = np.asarray(avoid, dtype=float)[order]
        far = np.where(np.isfinite(av) & (av > 0), av, np.nan)
    ca0, ca1, cb0, cb1 = al0[cells_r], al1[cells_r], b0[cells_r], b1[cells_r]
    ac, bc = 0.5 * (ca0 + ca1), 0.5 * (cb0 + cb1)  # the centre
    da, db = 0.5 * (ca1 - ca0), 0.5 * (cb1 - cb0)  # half-widths
    tt = np.arange(int(T1.max()) + 2)
    running = np.searchsorted(-T1, -tt, side="right")   # cells with T1 >= t
    before = np.searchsorted(-T0, -tt, side="left")     # cells with T0 > t
    from_ = np.searchsorted(-T0, -tt, side="right")     # cells with T0 >= t

    def wgt(lam):
        return prob.w_mu if prob.gap_form else 0.5 * prob.dist_sq * lam

    def scan(lam, rows, row_running, cell_row):
        """Per cell, at the centre of its box and each eigenvalue of ``lam`` (one row, or one
        per recursion row): the least start term over the interval plus the noise at T0. The
        recursion runs on ``rows`` (cells of one box share it; by decreasing horizon, the
        first ``row_running[t]`` still running at t); cell i reads row ``cell_row[i]``."""
        a = 1.0 + bc[rows][:, None] - ac[rows][:, None] * lam
        bcol = bc[rows][:, None]
        e, ep = np.ones_like(a), np.ones_like(a)
        h, hp, S = np.ones_like(a), np.zeros_like(a), np.zeros_like(a)
        G = a.shape[1]
        pmin, S0 = np.full((T0.size, G), np.inf), np.zeros((T0.size, G))
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(1, int(T1.max()) + 1):
                mb, i0, i1, m = row_running[t], before[t], from_[t], running[t]
                new = a[:mb] * e[:mb] - bcol[:mb] * ep[:mb]
                ep[:mb] = e[:mb]
                e[:mb] = new
                S[:mb] += h[:mb] * h[:mb]
                new = a[:mb] * h[:mb] - bcol[:mb] * hp[:mb]
                hp[:mb] = h[:mb]
                h[:mb] = new
                if m > i0:
                    eb = e[cell_row[i0:m]]
                    np.minimum(pmin[i0:m], eb * eb, out=pmin[i0:m])
                if i1 > i0:
                    S0[i0:i1] = S[cell_row[i0:i1]]
            lam_c = lam if lam.ndim == 1 else lam[cell_row]
            obj = (wgt(lam_c) * pmin
                   + (ell + prob.smp)[:, None] * 0.5 * lam_c * ac[:, None] ** 2 * S0)
            if far is not None:
                near = np.abs(np.log(lam_c / far[:, None])) < math.log(2.0)
                obj = np.where(near, -np.inf, obj)
        return np.where(np.isfinite(obj), obj, -np.inf)

    cells = np.arange(T0.size)

    def best_lambda(lam):  # per cell (rows of lam): its own recursion
        return scan(lam, cells, running, cells)

    from dpbounds.tuning._worst_case_search import worst_case_lambda_grid
    # Chebyshev-Lobatto points (dense at both ends) and geometric ones (a start term's peak
    # near mu at L/mu >> 1 falls between the first two Lobatto points), L first, mu last
    grid = np.unique(np.concatenate([worst_case_lambda_grid(mu, L, _INSTANCE_GRID),
                                     np.geomspace(mu, L, _INSTANCE_GRID)]))[::-1]
    # the recursion on the common grid depends on the box only: run once per box
    ub, box_of = np.unique(cells_r, return_inverse=True)
    first = np.zeros(ub.size, dtype=np.int64)
    first[box_of[::-1]] = np.arange(box_of.size)[::-1]  # a cell of each box (its longest)
    bo = np.argsort(first, kind="stable")  # boxes by their longest interval, decreasing
    rank = np.empty_like(bo)
    rank[bo] = np.arange(bo.size)
    obj = scan(grid, first[bo], np.searchsorted(-T1[first[bo]], -tt, side="right"),
               rank[box_of])
    # points between the neighbours of each of the best _INSTANCE_PEAKS grid points (the
    # best one can be an end while the peak sits between two others)
    top = np.argsort(-obj, axis=1)[:, :_INSTANCE_PEAKS]
    lo = grid[np.minimum(top + 1, grid.size - 1)]
    hi = grid[np.maximum(top - 1, 0)]
    local = (lo[:, :, None] + (hi - lo)[:, :, None]
             * np.linspace(0.0, 1.0, _INSTANCE_LOCAL + 1)).reshape(T0.size, -1)
    # then between the best local point's neighbours
    j = np.argmax(best_lambda(local), axis=1)
    best = local[np.arange(T0.size), j]
    span = np.abs((hi - lo)[np.arange(T0.size), j // (_INSTANCE_LOCAL + 1)]) / _INSTANCE_LOCAL
    fine = np.clip(best[:, None] + span[:, None] * np.linspace(-1.0, 1.0, _INSTANCE_LOCAL + 1),
                   mu, L)
    lam1 = fine[np.arange(T0.size), np.argmax(best_lambda(fine), axis=1)]
    # the centre's p_t and its derivatives in a (D) and in beta at fixed a (B); the noise
    # sums (and for step 8 their gradients and remainders) at T0
    a = 1.0 + bc - ac * lam1
    maj = _Majorants(lam1, ca0, ca1, cb0, cb1)
    box = (ca0, ca1, cb0, cb1, ac, bc, da, db)
    noise = _noise_taylor(lam1, maj, box, T0, joint_out is not None)
    second = (np.asarray(lam2, dtype=float)[order]
              if joint_out is not None and prob.d >= 2 and lam2 is not None else None)
    if second is not None and np.all(second == lam1):  # one eigenvalue (L = mu): reuse
        extra = [(second, noise)]
    else:
        extra = ([] if second is None else
                 [(second, _noise_taylor(second, _Majorants(second, *box[:4]), box, T0,
                                         True))])

    def spread(v_a, v_b, m_aa, m_ab, m_bb, s2, m3, r2):
        return _spread(lam1, da, db, v_a, v_b, m_aa, m_ab, m_bb, s2, m3, r2)

    e, ep = np.ones_like(a), np.ones_like(a)
    De, Dep, Be, Bep = (np.zeros_like(a) for _ in range(4))
    DDe, DDep, DBe, DBep, BBe, BBep = (np.zeros_like(a) for _ in range(6))
    start = np.full(a.size, np.inf)
    # step 8: (weight of the start term, [(k, noise pieces), ...]) per joint bound: the start
    # with the noise at lam1 (k = ell + smp, k = ell), the noise alone, and with a second
    # eigenvalue's noise (d >= 2: mu or L, weights (d - 1) ell and smp + (d - 1) ell)
    jw = wgt(lam1)
    half = 0.5 * lam1
    forms: list = [(jw, [(half * (ell + prob.smp), noise)]), (jw, [(half * ell, noise)]),
                   (0.0, [(half, noise)])]
    for lam_b, nz in extra:
        forms.append((jw, [(half * (ell + prob.smp), noise),
                           (0.5 * lam_b * (prob.d - 1) * ell, nz)]))
        forms.append((jw, [(half * ell, noise),
                           (0.5 * lam_b * (prob.smp + (prob.d - 1) * ell), nz)]))
    joint = [np.full(a.size, np.inf) for _ in forms]
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for t in range(0, int(T1.max()) + 1):
            maj.at(t)
            C = maj.C
            if t >= 1:  # advance (e, De, Be, ...) to t
                (e, ep, De, Dep, Be, Bep, DDe, DDep, DBe, DBep, BBe, BBep) = _advance(
                    a, bc, (e, ep, De, Dep, Be, Bep, DDe, DDep, DBe, DBep, BBe, BBep))
            tf = float(t)
            m_aa = 2.0 * (C(3, tf - 2) + cb1 * C(3, tf - 3))
            m_ab = 2.0 * (C(3, tf - 3) + cb1 * C(3, tf - 4)) + C(2, tf - 2)
            m_bb = 2.0 * (C(3, tf - 4) + cb1 * C(3, tf - 5) + C(2, tf - 3))
            m3 = (6.0 * (C(4, tf - 3) + cb1 * C(4, tf - 4)),
                  6.0 * (C(4, tf - 4) + cb1 * C(4, tf - 5)) + 2.0 * C(3, tf - 3),
                  6.0 * (C(4, tf - 5) + cb1 * C(4, tf - 6)) + 4.0 * C(3, tf - 4),
                  6.0 * (C(4, tf - 6) + cb1 * C(4, tf - 7)) + 6.0 * C(3, tf - 5))
            r2 = 4.0 * _U * (tf + 1.0) ** 2
            de = spread(De, Be, m_aa, m_ab, m_bb, (DDe, DBe, BBe), m3, r2)
            de = de + r2 * (C(1, tf) + cb1 * C(1, tf - 1))
            inside = (t >= T0) & (t <= T1)
            low = np.where(np.isfinite(de) & np.isfinite(e), np.maximum(np.abs(e) - de, 0.0),
                           0.0)
            start = np.where(inside, np.minimum(start, low), start)
            if joint_out is not None and np.any(inside):
                re = de - (lam1 * np.abs(De) * da + np.abs(De + Be) * db)
                for i, (w_i, terms) in enumerate(forms):
                    jv = _joint_lower(w_i, e, De, Be, re, lam1, ac, da, db, terms)
                    joint[i] = np.where(inside, np.minimum(joint[i], jv), joint[i])
    start = np.where(np.isfinite(start), start, 0.0)
    A_lo = wgt(lam1) * start * start
    S = noise["S"]
    U_lo = 0.5 * lam1 * ca0 * ca0 * np.where(np.isfinite(S), S, 0.0)
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    if lam_out is not None:  # the eigenvalue of each cell (tests)
        lam_out.append(lam1[back])
    if joint_out is not None:
        joint_out.append(tuple(np.where(np.isfinite(v), np.maximum(v, 0.0), 0.0)[back]
                               for v in joint))
    return A_lo[back], U_lo[back]


class _Majorants:
    r"""Step 6's majorants of the convolution powers :math:`h^{*k}_n` on a box at one
    eigenvalue per cell: :math:`C_k(n)=\rho^n\binom{n+2k-1}{2k-1}` from :math:`|h_j|\le
    (j+1)\rho^j` (:math:`\rho` the largest root modulus on the box), and, where the whole box
    has complex roots there, also :math:`\rho^n\binom{n+k-1}{k-1}/\sin^k\theta_{lo}` from
    :math:`|h_j|=\beta^{j/2}|\sin((j+1)\theta)|/\sin\theta\le\rho^j/\sin\theta_{lo}` (far
    below :math:`C_k` at long horizons: it keeps the decay without the factor :math:`j+1`);
    the smaller is used (each majorises). ``at(t)`` sets :math:`\rho^t`; ``C(k, n)`` for
    :math:`n\ge t-7`."""

    def __init__(self, lam, ca0, ca1, cb0, cb1):
        a_lo, a_hi = 1.0 + cb0 - ca1 * lam, 1.0 + cb1 - ca0 * lam
        A = np.maximum(np.abs(a_lo), np.abs(a_hi))
        rho = np.maximum(np.sqrt(cb1), 0.5 * (A + np.sqrt(np.maximum(A * A - 4.0 * cb0, 0.0))))
        self.lrho = np.log(rho * (1.0 + 1e-12))
        self.inv = [np.exp(-sh * self.lrho) for sh in range(8)]  # rho^-sh
        okc, th_lo, th_hi = _closed_form_theta_phi(lam, ca0, ca1, cb0, cb1)[:3]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            sn_lo = np.minimum(np.sin(th_lo), np.sin(th_hi)) * (1.0 - _CLOSED_PAD)
            inv_s = np.where(okc & (sn_lo > 0.0), 1.0 / sn_lo, np.inf)
            inv_s = np.where(np.isfinite(inv_s), inv_s, np.inf)
            self.inv_sk = [inv_s ** kk for kk in range(5)]
        self.t = 0
        self.pw = np.ones_like(self.lrho)

    def at(self, t: int) -> None:
        self.t = t
        self.pw = np.exp(t * self.lrho)

    def C(self, kk: int, n):
        if n < 0:
            return 0.0
        sh = int(round(self.t - n))
        with np.errstate(invalid="ignore", over="ignore"):
            return np.fmin(math.comb(int(n) + 2 * kk - 1, 2 * kk - 1),
                           math.comb(int(n) + kk - 1, kk - 1) * self.inv_sk[kk]) * (
                self.pw * self.inv[sh])


def _advance(a, b, st: tuple) -> tuple:
    """One step of :math:`f_{t+1}=af_t-\beta f_{t-1}` and of its derivatives in :math:`a` (D)
    and in :math:`\beta` at fixed :math:`a` (B) to second order (module docstring, step 6):
    ``st`` = (f, f_prev, Df, Df_prev, Bf, Bf_prev, DDf, DDf_prev, DBf, DBf_prev, BBf,
    BBf_prev), returned one step on."""
    f, fp, Df, Dfp, Bf, Bfp, DDf, DDfp, DBf, DBfp, BBf, BBfp = st
    return (a * f - b * fp, f, a * Df - b * Dfp + f, Df, a * Bf - b * Bfp - fp, Bf,
            a * DDf - b * DDfp + 2.0 * Df, DDf, a * DBf - b * DBfp + Bf - Dfp, DBf,
            a * BBf - b * BBfp - 2.0 * Bfp, BBf)


def _spread(lam1, da, db, v_a, v_b, m_aa, m_ab, m_bb, s2, m3, r2):
    """Step 6: the smaller of the two valid bounds of :math:`|f(x)-f(c)|` on the box:
    second-order majorants on the box, or the exact second derivatives at the centre (raised by
    ``r2`` times their majorants, their rounding) and third-order majorants."""
    s_aa, s_ab, s_bb = (np.abs(v) + r2 * m for v, m in zip(s2, (m_aa, m_ab, m_bb)))
    return np.minimum(_taylor_spread(lam1, da, db, v_a, v_b, m_aa, m_ab, m_bb),
                      _taylor3_spread(lam1, da, db, v_a, v_b, s_aa, s_ab, s_bb, m3))


def _noise_taylor(lam, maj: _Majorants, box, T0, joint: bool) -> dict:
    r"""Steps 6 and 8 for the noise sum :math:`\Sigma_{T_0}=\sum_{j<T_0}h_j^2` at eigenvalue
    ``lam`` (per cell) on each cell's box: ``S`` = :math:`\sum_j(|h_j(c)|-\Delta_j)_+^2`
    (step 6, a lower bound on the box) and, with ``joint``, ``Sc`` = :math:`\Sigma(c)`, its
    gradient (``Sa``, ``Sb``) in :math:`(\alpha,\beta)`, ``rho`` = :math:`\sum_j2|h_j(c)|
    R_j` (:math:`R_j` the remainder of :math:`h_j` beyond its linear term) and ``var`` =
    :math:`\sum_j\Delta_j(2|h_j(c)|+\Delta_j)\ge|\Sigma(x)-\Sigma(c)|`."""
    ca0, ca1, cb0, cb1, ac, bc, da, db = box
    a = 1.0 + bc - ac * lam
    h, hp = np.ones_like(a), np.zeros_like(a)
    Dh, Dhp, Bh, Bhp = (np.zeros_like(a) for _ in range(4))
    DDh, DDhp, DBh, DBhp, BBh, BBhp = (np.zeros_like(a) for _ in range(6))
    names = ("S", "Sc", "Sa", "Sb", "rho", "var")
    run = {k: np.zeros_like(a) for k in names}
    out = {k: np.zeros_like(a) for k in names}
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for t in range(1, int(T0.max()) + 1):
            maj.at(t)
            C = maj.C
            j = float(t - 1)  # h_j enters Sigma_t
            r2 = 4.0 * _U * (j + 1.0) ** 2
            dh = _spread(lam, da, db, Dh, Bh, 2.0 * C(3, j - 2), 2.0 * C(3, j - 3),
                         2.0 * C(3, j - 4), (DDh, DBh, BBh),
                         (6.0 * C(4, j - 3), 6.0 * C(4, j - 4), 6.0 * C(4, j - 5),
                          6.0 * C(4, j - 6)), r2)
            dh = dh + r2 * C(1, j)
            run["S"] += np.maximum(np.abs(h) - dh, 0.0) ** 2
            if joint:
                rh = dh - (lam * np.abs(Dh) * da + np.abs(Dh + Bh) * db)
                run["Sc"] += h * h
                run["Sa"] -= 2.0 * lam * h * Dh
                run["Sb"] += 2.0 * h * (Dh + Bh)
                run["rho"] += 2.0 * np.abs(h) * rh
                run["var"] += dh * (2.0 * np.abs(h) + dh)
            (h, hp, Dh, Dhp, Bh, Bhp, DDh, DDhp, DBh, DBhp, BBh, BBhp) = _advance(
                a, bc, (h, hp, Dh, Dhp, Bh, Bhp, DDh, DDhp, DBh, DBhp, BBh, BBhp))
            at0 = t == T0
            if np.any(at0):
                for k in names:
                    out[k] = np.where(at0, run[k], out[k])
    return out


def _joint_lower(w, e, De, Be, re, lam1, ac, da, db, terms):
    r"""Step 8: the lower bound on the box of :math:`w\,e_t(\lambda_1)^2+\sum_ik_i\alpha^2
    \Sigma^{(i)}` (``terms``: pairs of :math:`k_i\ge0` and :func:`_noise_taylor`'s pieces),
    from the values and gradients at the centre and the bounds ``re`` of :math:`e`'s
    remainder, ``rho`` of each :math:`\Sigma`'s and ``var`` of :math:`|\Sigma(x)-\Sigma(c)|`
    (module docstring, step 8)."""
    ga = w * 2.0 * e * (-lam1 * De)
    gb = w * 2.0 * e * (De + Be)
    rem = 2.0 * w * np.abs(e) * re
    val = w * e * e
    for k, nz in terms:
        S = nz["Sc"]
        ga = ga + k * (ac * ac * nz["Sa"] + 2.0 * ac * S)
        gb = gb + k * ac * ac * nz["Sb"]
        rem = rem + k * (ac * ac * nz["rho"] + (2.0 * ac * da + da * da) * nz["var"])
        val = val + k * ac * ac * S
    lin = np.abs(ga) * da + np.abs(gb) * db
    return val - lin * (1.0 + 1e-12) - rem


def _box_lower(prob: _Problem, al0, al1, b0, b1, P_end: np.ndarray | None = None,
               by_interval: bool = False, need: float = math.inf) -> np.ndarray:
    """The lower bound of :math:`\\min_T W` on each box (module docstring, 0-5); with
    ``by_interval``, of :math:`W` on each box (rows) and horizon interval (columns). Step 5'
    is run only where the bound of steps 0-5 is below ``need`` (elsewhere it cannot lower a
    result that is compared with ``need``; leaving it out only weakens a bound)."""
    mu, L = prob.mu, prob.L
    Tlo, Thi = prob.Tlo, prob.Thi
    # 1. the start term at mu
    a_c = np.nextafter(np.nextafter((1.0 + b1) - al1 * mu, -np.inf), -np.inf)
    if P_end is None:
        P_end = _corner_residuals(a_c, b1, Thi)
    C = np.cos(math.pi / Thi.astype(float))[None, :]
    s0, s1 = np.sqrt(b0)[:, None], np.sqrt(b1)[:, None]
    s = np.clip(C, s0, s1)
    cond = (s * s - 2.0 * s * C + (1.0 - (al1 * mu)[:, None])) >= _COND_MARGIN
    err = 4.0 * _U * (Thi.astype(float) + 1.0) ** 2
    with np.errstate(invalid="ignore"):
        p = np.where(cond & np.isfinite(P_end), np.maximum(P_end - err[None, :], 0.0), 0.0)
    LA = prob.w_mu * p * p
    # 1''. the start term's negative swing at mu 2^(i/2), i = 0..4 (where the mode turns
    # within T): a bound of the start term at some eigenvalue of [mu, lam_neg]
    LN = np.zeros_like(LA)
    lam_neg = [lam for lam in mu * 2.0 ** (0.5 * np.arange(5)) if lam <= L]
    for lam in lam_neg:
        LN = np.maximum(LN, _start_negative_lower(prob, lam, al0, al1, b0, b1))
    # 2. the noise terms: at mu, at L, and (for 1'') over [mu, max lam_neg]
    Umu = _sum_sq_lower_at(prob, mu, al0, al1, b0, b1)
    UL = _sum_sq_lower_at(prob, L, al0, al1, b0, b1) if L > mu else Umu
    UN = (_sum_sq_lower_at(prob, np.full(al0.size, mu), al0, al1, b0, b1,
                           lam_hi=np.full(al0.size, max(lam_neg)))
          if max(lam_neg) > mu else Umu)
    Umax = np.maximum(Umu, UL)
    # 1'. the start term at L where a < 0 on the whole box
    LAL = _start_at_L_lower(prob, al0, b0, b1)
    if L <= mu:  # one eigenvalue: all are bounds of the same start term
        LA = LN = LAL = np.maximum(np.maximum(LA, LN), LAL)
    # 5. the start term at some eigenvalue of the oscillating interval, and the noise there
    lam_a, lam_b = _oscillating_interval(prob, al0, al1, b0)
    osc = lam_a < lam_b
    pieces = _oscillating_pieces(prob, al0, al1, b0, b1, lam_a, lam_b)
    LO = np.zeros((al0.size, Tlo.size))
    for bound, _, _ in pieces:
        LO = np.maximum(LO, bound)
    UO = np.zeros_like(LO)
    if np.any(osc):
        UO[osc] = _sum_sq_lower_at(prob, lam_a[osc], al0[osc], al1[osc], b0[osc], b1[osc],
                                   lam_hi=lam_b[osc])
    ell, smp, d = prob.ell[None, :], prob.smp, prob.d

    def combine(W, start, U1, ell, Umax):
        return combine_instances(W, start, U1, ell, Umax, smp, d)

    with np.errstate(invalid="ignore", over="ignore"):
        W = (d * ell + smp) * Umax
        for start, U1 in ((LA, Umu), (LN, UN), (LAL, UL), (LO, UO)):
            W = combine(W, start, U1, ell, Umax)
        W = np.where(np.isnan(W), 0.0, W)
        # 5'. each piece's start bound with the noise bound over that piece (its lambda*
        # lies in it), where the bound is below ``need``
        for bound, lo, hi in pieces:
            todo = (bound > 0) & (W < need) & (osc & (hi > lo))[:, None]
            rows = np.flatnonzero(np.any(todo, axis=1))
            if rows.size == 0:
                continue
            cols = np.flatnonzero(np.any(todo[rows], axis=0))
            blk = np.ix_(rows, cols)
            UP = np.maximum(UO[blk], _sum_sq_lower_at(prob, lo[rows], al0[rows], al1[rows],
                                                      b0[rows], b1[rows], cols, hi[rows]))
            Wb = combine(W[blk], bound[blk], UP, ell[:, cols], Umax[blk])
            W[blk] = np.where(np.isnan(Wb), W[blk], Wb)
        # 7. the closed form at one eigenvalue per box (complex roots on the whole box),
        # chosen at the centre's weakest interval, where the bound is below ``need``
        prev7 = np.full(al0.size, np.nan)  # each box's last eigenvalue of step 7
        for rnd in range(_CLOSED_ROUNDS if need < math.inf else 0):
            Wmin = np.min(W, axis=1)
            # after two rounds only boxes near the threshold (the later rounds are for the
            # third to fifth weakest intervals, which matter only there)
            near = Wmin >= need / _CLOSED_LATE_WITHIN if rnd >= 2 else True
            rows = np.flatnonzero((Wmin < need) & near)
            if rows.size:
                jw = np.argmin(W[rows], axis=1)
                if rnd >= 2:  # near the earlier choice (the rows that had one)
                    rows, jw = rows[np.isfinite(prev7[rows])], jw[np.isfinite(prev7[rows])]
                lam7 = _closed_form_lambda(prob, al0[rows], al1[rows], b0[rows], b1[rows],
                                           prob.Thi[jw], prob.ell[jw],
                                           prev7[rows] if rnd >= 2 else None)
                okr = np.isfinite(lam7)
                rows, lam7 = rows[okr], lam7[okr]
                prev7[rows] = lam7
            if rows.size:
                A7 = _closed_form_start(prob, lam7, al0[rows], al1[rows], b0[rows], b1[rows],
                                        prob.Tlo, prob.Thi)
                U7 = np.maximum(
                    _sum_sq_lower_at(prob, lam7, al0[rows], al1[rows], b0[rows], b1[rows]),
                    _closed_form_sum_sq(lam7, al0[rows], al1[rows], b0[rows], b1[rows],
                                        prob.Tlo))
                W7 = combine(W[rows], A7, U7, ell, Umax[rows])
                W[rows] = np.where(np.isnan(W7), W[rows], W7)
        # 6. an instance at one eigenvalue, bounded on the box by Taylor's formula at its
        # centre: at each box's weakest horizon interval while it is below ``need`` (a few
        # rounds: the box's bound is its least interval's)
        short = (prob.Thi <= _INSTANCE_TMAX)[None, :]
        done6 = np.zeros(W.shape, dtype=bool)
        for _ in range(_INSTANCE_ROUNDS if need < math.inf else 0):
            # (a box far below ``need`` is cut anyway: step 6 raises a bound by ~20% at most)
            ok = short & ~done6 & (W >= need / _INSTANCE_WITHIN)
            # a box's bound is its least interval's: raising an interval above the least one
            # step 6 cannot touch (``cap``) changes nothing
            cap = (np.min(np.where(ok, np.inf, W), axis=1, keepdims=True) if _INSTANCE_CAP
                   else np.inf)
            Wm = np.where(ok & (W < np.minimum(cap, need)), W, np.inf)
            k = min(_INSTANCE_PER_ROUND, Wm.shape[1])
            cols = np.argpartition(Wm, k - 1, axis=1)[:, :k]
            rr, kk = np.nonzero(np.take_along_axis(Wm, cols, axis=1) < np.inf)
            if rr.size == 0:
                break
            cc = cols[rr, kk]
            done6[rr, cc] = True
            W6, lam6 = _instance_bound(prob, al0, al1, b0, b1, rr, cc, LA, LAL, Umu, UL,
                                       Umax, None)
            W[rr, cc] = np.maximum(W[rr, cc], W6)
            # a second eigenvalue (away from the first) where the cell stays below ``need``:
            # near critical damping at mu the bound is loose while a peak near L is not
            Wc = W[rr, cc]
            # (none where every eigenvalue is within a factor 2 of the first: L < 2 mu)
            again = (np.flatnonzero((Wc < need) & (Wc >= need / _CLOSED_LATE_WITHIN))
                     if _INSTANCE_SECOND and L >= 2.0 * mu else np.array([], int))
            if again.size:
                W6, _ = _instance_bound(prob, al0, al1, b0, b1, rr[again], cc[again], LA, LAL,
                                        Umu, UL, Umax, lam6[again])
                W[rr[again], cc[again]] = np.maximum(W[rr[again], cc[again]], W6)
    # a bound past the float range (a far-unstable box: the worst case there overflows too) is
    # the largest float, still below what it bounds, not +inf
    W = np.minimum(W, np.finfo(float).max)
    return (W if by_interval else np.min(W, axis=1)) * (1.0 - _SAFETY)


def _instance_bound(prob: _Problem, al0, al1, b0, b1, rr, cc, LA, LAL, Umu, UL, Umax,
                    avoid) -> tuple[np.ndarray, np.ndarray]:
    """Steps 6 and 8 on the cells ``(rr, cc)``: the bound of :math:`W` there (step 0's
    instances) and the eigenvalue used; ``avoid`` as in :func:`_instance_cells`."""
    mu, L, smp, d = prob.mu, prob.L, prob.smp, prob.d
    ell = prob.ell[cc]
    joint: list = []
    lam6: list = []
    # the other directions' eigenvalue of step 8 (d >= 2): the end with the larger noise bound
    lam2 = np.where(UL[rr, cc] >= Umu[rr, cc], L, mu)
    A6, U6 = _instance_cells(prob, al0, al1, b0, b1, rr, cc, lam6, joint if _JOINT else None,
                             avoid, lam2)
    if joint:
        J1, J2, U8 = joint[0][:3]
        U6 = np.maximum(U6, U8)
        # at mu or L the start and noise bounds of steps 1, 1', 2 hold at the same eigenvalue:
        # the larger of each pair is a bound there
        at_mu, at_L = lam6[0] == mu, lam6[0] == L
        A6 = np.where(at_mu, np.maximum(A6, LA[rr, cc]), A6)
        U6 = np.where(at_mu, np.maximum(U6, Umu[rr, cc]), U6)
        A6 = np.where(at_L, np.maximum(A6, LAL[rr, cc]), A6)
        U6 = np.where(at_L, np.maximum(U6, UL[rr, cc]), U6)
    Um6 = np.maximum(Umax[rr, cc], U6)
    W6 = A6 + (ell + smp) * U6 + (d - 1) * ell * Um6
    if d >= 2:
        W6 = np.maximum(W6, A6 + ell * U6 + (smp + (d - 1) * ell) * Um6)
    if joint:  # 8. the same instance with start and noise bounded together
        W6 = np.maximum(W6, J1 + (d - 1) * ell * Um6)
        if d >= 2:
            W6 = np.maximum(W6, J2 + (smp + (d - 1) * ell) * Um6)
            for Jb in joint[0][3:]:  # with the other directions' noise at mu or L as well
                W6 = np.maximum(W6, Jb)
    return np.where(np.isnan(W6), 0.0, W6), lam6[0]


def box_lower_bounds(prob: _Problem, al0, al1, b0, b1, need: float = math.inf) -> np.ndarray:
    """:func:`_box_lower` in chunks (bounded memory)."""
    al0, al1, b0, b1 = (np.asarray(v, dtype=float).ravel() for v in
                        np.broadcast_arrays(al0, al1, b0, b1))
    out = np.empty(al0.size)
    chunk = max(16, min(_CHUNK, _CHUNK_CELLS // max(prob.Tlo.size, 1)))  # bounded memory
    for s in range(0, al0.size, chunk):
        sl = slice(s, s + chunk)
        out[sl] = _box_lower(prob, al0[sl], al1[sl], b0[sl], b1[sl], need=need)
    return out


def make_problem(mu: float, L: float, d: int, Tmax: int, laplace_var: Callable, smp: float,
                 initial_gap: float | None, dist_sq: float | None,
                 any_noise: bool = False, single: int = _T_SINGLE,
                 fraction: int = _T_PER_OCTAVE_FRACTION,
                 window: tuple[int, int] | None = None) -> _Problem:
    """The data of a certification (``laplace_var(T)``: the per-coordinate Laplace variance at
    horizon ``T``, nondecreasing; with ``any_noise`` any sequence: it is evaluated at every
    horizon and each interval takes its least value, step 3)."""
    Tlo, Thi = horizon_intervals(Tmax, single, fraction, window)
    if any_noise:
        every = np.asarray(laplace_var(np.arange(1, Tmax + 1, dtype=float)), dtype=float)
        if every.shape != (Tmax,) or np.any(np.isnan(every)) or np.any(every < 0):
            raise ValueError("the noise variance per horizon must be >= 0 (no nan) at every "
                             f"T in [1, {Tmax}]")
        ell = np.minimum.reduceat(every, Tlo - 1)
    else:
        ell = np.asarray(laplace_var(Tlo.astype(float)), dtype=float)
    if initial_gap is not None:
        w_mu = w_L = float(initial_gap)
    else:
        assert dist_sq is not None
        w_mu, w_L = 0.5 * mu * float(dist_sq), 0.5 * L * float(dist_sq)
    Tk = kmap = None
    if window is not None:
        Tk = horizon_intervals(Tmax, single, fraction)[0]
        kmap = np.searchsorted(Tk, Tlo, side="right") - 1
    return _Problem(float(mu), float(L), int(d), float(smp), w_mu, w_L, Tlo, Thi, ell,
                    initial_gap is not None, float(dist_sq) if dist_sq is not None else 0.0,
                    Tk, kmap)


def _sum_sq_lower_at(prob: _Problem, lam, al0, al1, b0, b1, cols=None, lam_hi=None):
    """:func:`_sum_sq_lower` at the ``T0`` of each interval of ``cols`` (all by default),
    computed at ``prob.Tk`` where set (the largest k <= T0: a lower bound, U_k grows with k)."""
    if prob.Tk is None or prob.kmap is None:
        return _sum_sq_lower(lam, al0, al1, b0, b1,
                             prob.Tlo if cols is None else prob.Tlo[cols], lam_hi=lam_hi)
    want = prob.kmap if cols is None else prob.kmap[cols]
    kk = np.unique(want)
    M = _sum_sq_lower(lam, al0, al1, b0, b1, prob.Tk[kk], lam_hi=lam_hi)
    return M[:, np.searchsorted(kk, want)]


def combine_instances(W: np.ndarray, start: np.ndarray, U1: np.ndarray, ell: np.ndarray,
                      Umax: np.ndarray, smp: float, d: int) -> np.ndarray:
    """Step 0's instances: ``max(W, start + (ell + smp) U1 + (d - 1) ell Umax)`` and, for
    ``d >= 2``, ``start + ell U1 + (smp + (d - 1) ell) Umax`` (the start and one noise direction
    at the eigenvalue bounded by ``U1``, the other directions at ``Umax``'s)."""
    W = np.maximum(W, start + (ell + smp) * U1 + (d - 1) * ell * Umax)
    if d >= 2:
        W = np.maximum(W, start + ell * U1 + (smp + (d - 1) * ell) * Umax)
    return W


def _bracket_on_grid(prob: _Problem, xs: np.ndarray, ys: np.ndarray, alpha: float | None,
                     beta: float | None, best: float, rtol: float, max_boxes: int,
                     box_lows: Callable[..., np.ndarray]) -> ErrorBracket:
    """The branch and bound on the cells of ``xs x ys`` (x = log alpha, y = -log(1 - beta))
    and their tails, best first: the least bound of the leaves is the result, so the leaves
    with the least bounds are cut (at most ``_SPLIT`` a round, along the coefficients not
    fixed), until every leaf reaches ``best / (1 + rtol)`` or ``max_boxes`` is spent.
    ``box_lows(prob, a_lo, a_hi, b_lo, b_hi, need=)`` bounds a batch of boxes (heavy ball's
    :func:`box_lower_bounds`, or :mod:`._certify_nesterov`'s); boxes with alpha past the grid
    are bounded by ``prob.w_L`` (step 4, or N2)."""
    x0, y1 = float(xs[0]), float(ys[-1])
    # a fixed coefficient is a degenerate side [v, v] (never cut); the other side's cells and
    # its tail as below
    if alpha is not None:
        xs = np.array([math.log(alpha)] * 2)
    if beta is not None:
        ys = np.array([-math.log1p(-beta)] * 2)  # -log(1 - beta): to_ab gives beta back
    X0, Y0 = (g.ravel() for g in np.meshgrid(xs[:-1], ys[:-1]))
    X1, Y1 = (g.ravel() for g in np.meshgrid(xs[1:], ys[1:]))
    # the tails: alpha in [0, alpha_min] (per beta cell), beta in [beta_Y, 1] (per alpha cell)
    # and their corner
    nxc, nyc = xs.size - 1, ys.size - 1
    tx = alpha is None  # alpha free: its tail [0, alpha_min]
    ty = beta is None
    TX0 = np.concatenate([np.full(nyc * tx, -np.inf), xs[:-1][:nxc * ty], [-np.inf] * (tx & ty)])
    TX1 = np.concatenate([np.full(nyc * tx, x0), xs[1:][:nxc * ty], [x0] * (tx & ty)])
    TY0 = np.concatenate([ys[:-1][:nyc * tx], np.full(nxc * ty, y1), [y1] * (tx & ty)])
    TY1 = np.concatenate([ys[1:][:nyc * tx], np.full(nxc * ty, np.inf), [np.inf] * (tx & ty)])

    def to_ab(xl, xh, yl, yh):
        b_lo, b_hi = -np.expm1(-yl), np.where(np.isposinf(yh), 1.0, -np.expm1(-yh))
        if beta is not None:  # exactly the fixed value (no round trip through the log)
            b_lo, b_hi = np.full(np.shape(yl), float(beta)), np.full(np.shape(yh), float(beta))
        a_lo, a_hi = np.where(np.isneginf(xl), 0.0, np.exp(xl)), np.exp(xh)
        if alpha is not None:
            a_lo, a_hi = np.full(np.shape(xl), float(alpha)), np.full(np.shape(xh), float(alpha))
        return a_lo, a_hi, b_lo, b_hi

    thr = best / (1.0 + rtol)

    def lows(b):
        return box_lows(prob, *to_ab(*b), need=thr)

    # the tails are boxes too, cut along their finite side only
    boxes = tuple(np.concatenate([g, t]) for g, t in zip((X0, X1, Y0, Y1), (TX0, TX1, TY0, TY1)))
    lb = lows(boxes)
    n_boxes = boxes[0].size
    per = 2 if alpha is not None or beta is not None else 4  # children of a cut box
    while n_boxes < max_boxes and not (alpha is not None and beta is not None):
        open_ = np.flatnonzero(lb < thr)
        if open_.size == 0:
            break
        take = open_[np.argsort(lb[open_])[:min(_SPLIT, (max_boxes - n_boxes) // per)]]
        if take.size == 0:
            break
        rest = np.ones(lb.size, dtype=bool)
        rest[take] = False
        children = _split(tuple(v[take] for v in boxes), cut_x=alpha is None,
                          cut_y=beta is None)
        clb = lows(children)
        n_boxes += children[0].size
        boxes = tuple(np.concatenate([v[rest], c]) for v, c in zip(boxes, children))
        lb = np.concatenate([lb[rest], clb])
    i = int(np.argmin(lb))
    settled = float(lb[i]) if alpha is not None else min(prob.w_L, float(lb[i]))
    at = tuple(float(np.ravel(v)[0]) for v in to_ab(*(np.array([b[i]]) for b in boxes)))
    return ErrorBracket(min(settled, best), n_boxes, at)  # type: ignore[arg-type]


def certify_error_minimum(mu: float, L: float, d: int, Tmax: int, laplace_var: Callable,
                          smp: float, *, best: float, initial_gap: float | None = None,
                          dist_sq: float | None = None, rtol: float = 1e-3,
                          max_boxes: int | None = None, cells: int = 24,
                          any_noise: bool = False, alpha: float | None = None,
                          beta: float | None = None, near: int | None = None) -> ErrorBracket:
    r"""Branch and bound (module docstring): a proven lower bound of :math:`\min W` over every
    :math:`\alpha>0`, :math:`0\le\beta<1`, :math:`1\le T\le T_{\max}`. ``best`` is the
    incumbent (an upper end of the minimum): boxes whose bound reaches ``best / (1 + rtol)``
    are not cut further. The result never exceeds ``best``. ``any_noise``: ``laplace_var``
    may be any sequence (step 3), not only a nondecreasing one.

    ``alpha`` or ``beta`` (or both) fixed: the same over the **slice** of heavy ball with that
    coefficient fixed (gradient descent: ``beta=0``), every :math:`T\le T_{\max}` (module
    docstring, *Slices*): the boxes are degenerate in the fixed coefficient and cut along the
    other only, the horizons are finer (single up to :data:`_SLICE_T_SINGLE`)."""
    if alpha is not None and not (0.0 < alpha < math.inf):
        raise ValueError(f"alpha must be positive and finite (a fixed step), got {alpha!r}")
    if beta is not None and not (0.0 <= beta < 1.0):
        raise ValueError(f"beta must be in [0, 1) (a fixed momentum), got {beta!r}")
    sliced = alpha is not None or beta is not None
    if max_boxes is None:
        max_boxes = _SLICE_MAX_BOXES if sliced else _MAX_BOXES
    single, fraction = ((_SLICE_T_SINGLE, _SLICE_FRACTION) if sliced
                        else (_T_SINGLE, _T_PER_OCTAVE_FRACTION))
    prob = make_problem(mu, L, d, Tmax, laplace_var, smp, initial_gap, dist_sq, any_noise,
                        single, fraction, horizon_window(near, Tmax))
    x0 = math.log(1e-3 / (mu * float(Tmax) ** 2))
    x1 = math.log(4.0 / L)
    y0, y1 = 0.0, math.log(1e3 * Tmax)
    nx = max(int(math.ceil((x1 - x0) / 1.0)), cells)
    ny = max(int(math.ceil(y1 / 1.0)), cells // 2)
    xs, ys = np.linspace(x0, x1, nx + 1), np.linspace(y0, y1, ny + 1)
    if alpha is not None and alpha >= 4.0 / L:  # step 4: every such point is unstable
        return ErrorBracket(min(prob.w_L, best), 0, (alpha, alpha, beta or 0.0, beta or 1.0))
    return _bracket_on_grid(prob, xs, ys, alpha, beta, best, rtol, max_boxes,
                            box_lower_bounds)


def _split(boxes: tuple, cut_x: bool = True, cut_y: bool = True) -> tuple:
    """Each box cut in two along each finite side (a tail box only along its finite one);
    ``cut_x`` / ``cut_y`` False: that side is never cut (a slice's fixed coefficient)."""
    xl, xh, yl, yh = boxes
    fx = np.isfinite(xl) & np.isfinite(xh) & cut_x
    fy = np.isfinite(yl) & np.isfinite(yh) & cut_y
    with np.errstate(invalid="ignore"):
        xm, ym = 0.5 * (xl + xh), 0.5 * (yl + yh)
    out: list[list[np.ndarray]] = [[], [], [], []]
    for cx, cy in ((False, False), (True, False), (False, True), (True, True)):
        # child (cx, cy): upper half in x if cx, in y if cy; a side that is not finite is kept
        # whole, and then only the child with cx (cy) False exists
        sel = (fx | ~np.asarray(cx)) & (fy | ~np.asarray(cy))
        ax0 = np.where(fx, np.where(cx, xm, xl), xl)[sel]
        ax1 = np.where(fx, np.where(cx, xh, xm), xh)[sel]
        ay0 = np.where(fy, np.where(cy, ym, yl), yl)[sel]
        ay1 = np.where(fy, np.where(cy, yh, ym), yh)[sel]
        for lst, v in zip(out, (ax0, ax1, ay0, ay1)):
            lst.append(v)
    return tuple(np.concatenate(v) for v in out)
