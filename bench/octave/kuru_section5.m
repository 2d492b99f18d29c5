function kuru_section5(infile, outfile)
% KURU_SECTION5  Kuru et al. Section 5 (Figs. 3-4) in Octave/MATLAB: the reference for
% bench/bench_octave_ratio.py.
%
%   kuru_section5('in.mat', 'out.mat')
%
% A straightforward vectorised implementation, as a MATLAB user would write the paper's
% experiment: the trials of a configuration are the columns of one d x N state matrix, so
% every data pass is a matrix product over all trials; F(x_t) - F* is recorded at every
% iterate x_0..x_T of every trial (what the figures plot).
%
% in.mat (written by bench_octave_ratio.py from the dpbounds run it is compared with):
%   X (n x d), y (n x 1, +-1), lam, x0 (scalar start, x_0 = x0 * ones), trials, seed,
%   runs: cell array of structs with fields
%     name, kind ('hb' or 'nag'), m (batch size), alpha, beta (T x 1 step sizes and
%     momenta), restart (T x 1, 1 where the momentum restarts: a MASG stage change),
%     b (T x 1 Laplace scales; 0 = no noise).
% The schedules (steps, momenta, horizon and noise allocation of the -opt methods) are
% planned by dpbounds and handed over, so this script times the iterations only: its
% CPU time leaves out the planning that the dpbounds time includes.
%
% out.mat: Fstar, and for run k: trace_k ((T+1) x trials, F(x_t) - F*), plus cpu_runs.
%
% Objective (Kuru et al. eq. (35)): F(x) = mean_i log(1 + exp(-y_i a_i' x)) + lam ||x||^2.
% Mini-batches: m of the n samples without replacement, independently per trial and step
% (randperm), the full data when m = n; Laplace noise of scale b_t on the mean gradient.
% Heavy ball: x+ = x - alpha (g(x) + noise) + beta (x - x_prev);
% Nesterov:   p = x + beta (x - x_prev), x+ = p - alpha (g(p) + noise).

  S = load(infile);
  X = S.X; y = S.y(:); lam = S.lam; N = double(S.trials);
  [n, d] = size(X);
  rand('twister', double(S.seed));
  U = y .* X;  % signed features: the margins are U * x

  % F* by Newton's method from 0 (F is strongly convex: a few steps to round-off)
  w = zeros(d, 1);
  for it = 1:50
    z = U * w;
    s = 1 ./ (1 + exp(z));                     % sigma(-z)
    g = -U' * s / n + 2 * lam * w;
    H = U' * (U .* (s .* (1 - s))) / n + 2 * lam * eye(d);
    step = H \ g;
    w = w - step;
    if norm(step) < 1e-15 * max(1, norm(w)), break; end
  end
  Fstar = mean(log1p(exp(-U * w))) + lam * (w' * w);

  out = struct('Fstar', Fstar, 'n', n, 'd', d);
  runs = S.runs;
  if ~iscell(runs), runs = num2cell(runs); end
  cpu_runs = zeros(numel(runs), 1);
  for k = 1:numel(runs)
    r = runs{k};
    t0 = cputime;
    tr = run_one(U, lam, N, S.x0, r, Fstar);
    cpu_runs(k) = cputime - t0;
    out.(sprintf('trace_%d', k)) = tr;
  end
  out.cpu_runs = cpu_runs;
  save('-v7', outfile, '-struct', 'out');
end


function tr = run_one(U, lam, N, x0, r, Fstar)
  [n, d] = size(U);
  alpha = r.alpha(:); beta = r.beta(:); b = r.b(:); restart = r.restart(:);
  T = numel(alpha); m = double(r.m);
  nag = strcmp(r.kind, 'nag');
  x = x0 * ones(d, N); x_prev = x;
  tr = zeros(T + 1, N);
  for t = 1:T
    if restart(t), x_prev = x; end
    if nag
      p = x + beta(t) * (x - x_prev);
    else
      p = x;
    end
    if m == n
      if nag && beta(t) ~= 0
        Z = U * [x, p];                        % margins at x (loss) and p (gradient)
        F = mean(log1p(exp(-Z(:, 1:N))), 1);
        s = 1 ./ (1 + exp(Z(:, N+1:end)));     % sigma(-z) at the look-ahead point
      else
        Z = U * x;
        e = exp(-Z);
        F = mean(log1p(e), 1);
        s = e ./ (1 + e);
      end
      g = -(U' * s) / n + 2 * lam * p;
    else
      F = mean(log1p(exp(-U * x)), 1);         % F(x_t) on the full data, every trial
      I = zeros(m, N);
      for j = 1:N
        I(:, j) = randperm(n, m)';
      end
      Ub = U(I(:), :);                          % (m N) x d: the N mini-batches stacked
      Pb = repelem(p', m, 1);                   % each trial's point beside its batch
      s = 1 ./ (1 + exp(sum(Ub .* Pb, 2)));
      g = -reshape(sum(reshape(Ub .* s, m, N, d), 1), N, d)' / m + 2 * lam * p;
    end
    tr(t, :) = F + lam * sum(x .^ 2, 1) - Fstar;
    if b(t) > 0
      u = rand(d, N) - 0.5;
      g = g - b(t) * sign(u) .* log(1 - 2 * abs(u));   % Laplace(0, b_t)
    end
    x_new = p - alpha(t) * g;
    if ~nag && beta(t) ~= 0
      x_new = x_new + beta(t) * (x - x_prev);
    end
    x_prev = x; x = x_new;
  end
  tr(T + 1, :) = mean(log1p(exp(-U * x)), 1) + lam * sum(x .^ 2, 1) - Fstar;
end
