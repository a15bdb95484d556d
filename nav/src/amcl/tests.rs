//! The filter's tests on the synthetic floor: tracking, determinism, KLD bounds, global
//! localization and the kidnapped robot.

use super::*;
use crate::synthetic;
use motion::MotionNoise;

struct World {
    model: Arc<MapModel>,
    blocked: DistanceField,
}

fn world() -> World {
    let map = synthetic::floor();
    let blocked = DistanceField::to_not_free(&map);
    World {
        model: Arc::new(MapModel::new(map)),
        blocked,
    }
}

/// Drives `filter` along `truth` with odometry that drifts (seeded), one scan per pose;
/// returns the error of the best hypothesis after each update (m, rad).
fn drive(w: &World, filter: &mut Filter, truth: &[Pose], seed: u64) -> Vec<(f64, f64)> {
    let mut rng = Rng::new(seed);
    let noise = MotionNoise {
        alpha: [0.02; 4],
        ..MotionNoise::default()
    };
    let mut odom = Pose::new(10.0, -3.0, 1.0);
    let mut errors = Vec::new();
    for (k, t) in truth.iter().enumerate() {
        if k > 0 {
            for piece in motion::pieces(&truth[k - 1], t, &noise) {
                motion::sample(&mut odom, &piece, &mut rng);
            }
        }
        let scan = synthetic::scan(w.model.map(), &w.blocked, t, 181, 20.0, 0.01, &mut rng);
        if filter.update(odom, &scan) {
            let b = filter.best().unwrap().mean;
            errors.push((b.distance(t), angle_diff(b.theta, t.theta).abs()));
            if std::env::var("NAV_DEBUG").is_ok() {
                let s = filter.stats();
                eprintln!(
                    "{k} err {:.3} m {:.2} deg n {} ess {:.0} res {} inj {} w {:.3} b {:.3} hyps {}",
                    b.distance(t),
                    angle_diff(b.theta, t.theta).to_degrees(),
                    s.particles,
                    s.ess,
                    s.resampled,
                    s.injected,
                    s.w_avg,
                    s.beta,
                    filter.hypotheses().len()
                );
            }
        }
    }
    errors
}

fn rms(e: &[(f64, f64)]) -> f64 {
    (e.iter().map(|x| x.0 * x.0).sum::<f64>() / e.len() as f64).sqrt()
}

fn quick_params() -> Params {
    Params {
        motion: MotionNoise {
            alpha: [0.05; 4],
            ..MotionNoise::default()
        },
        ..Params::default()
    }
}

#[test]
fn tracks_the_tour_from_a_rough_initial_pose() {
    let w = world();
    let truth = synthetic::tour(0.3);
    let init = Init::Pose(
        Pose::new(truth[0].x + 0.2, truth[0].y - 0.15, truth[0].theta + 0.1),
        diagonal(0.3, 0.3, 0.2),
    );
    let mut f = Filter::new(w.model.clone(), quick_params(), 5, init);
    let e = drive(&w, &mut f, &truth, 9);
    assert!(e.len() > 50, "{} updates", e.len());
    let tail = &e[5..];
    assert!(rms(tail) < 0.05, "rms {} m", rms(tail));
    let worst = tail.iter().map(|x| x.0).fold(0.0, f64::max);
    assert!(worst < 0.2, "worst {worst} m");
    let worst_a = tail.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(
        worst_a < 3f64.to_radians(),
        "worst {} deg",
        worst_a.to_degrees()
    );
    // Hypotheses: sorted, at most ten, weights summing to at most 1.
    let h = f.hypotheses();
    assert!(!h.is_empty() && h.len() <= 10);
    assert!(h.windows(2).all(|p| p[0].weight >= p[1].weight));
    assert!(h.iter().map(|x| x.weight).sum::<f64>() <= 1.0 + 1e-9);
}

fn fingerprint(f: &Filter) -> Vec<u8> {
    let mut out = Vec::new();
    for (p, w) in f.poses().iter().zip(f.weights()) {
        for v in [p.x, p.y, p.theta, *w] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    for h in f.hypotheses() {
        for v in [h.mean.x, h.mean.y, h.mean.theta, h.weight] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in h.cov.iter().flatten() {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

#[test]
fn same_inputs_and_seed_give_identical_bytes() {
    let w = world();
    let truth = synthetic::tour(0.4);
    let run = |seed: u64| {
        let mut f = Filter::new(w.model.clone(), quick_params(), seed, Init::Global);
        let e = drive(&w, &mut f, &truth[..60], 3);
        (fingerprint(&f), e)
    };
    let (a, ea) = run(17);
    let (b, eb) = run(17);
    assert_eq!(a, b, "two runs with one seed differ");
    assert_eq!(ea, eb);
    let (c, _) = run(18);
    assert_ne!(a, c, "another seed gives the same particles");
}

#[test]
fn kld_keeps_the_count_within_bounds_and_grows_it_with_uncertainty() {
    let w = world();
    let truth = synthetic::tour(0.3);
    let counts = |alpha: f64| {
        let mut p = quick_params();
        p.min_particles = 300;
        p.max_particles = 3000;
        p.motion.alpha = [alpha; 4];
        // Resample every update, so every update sets the count.
        p.resample_ess = 1.1;
        let mut f = Filter::new(
            w.model.clone(),
            p,
            2,
            Init::Pose(truth[0], diagonal(0.1, 0.1, 0.05)),
        );
        assert_eq!(f.poses().len(), 3000);
        let mut rng = Rng::new(4);
        let mut counts = Vec::new();
        for t in truth.iter().take(60) {
            let scan = synthetic::scan(w.model.map(), &w.blocked, t, 181, 20.0, 0.01, &mut rng);
            // Odometry equal to the truth.
            if f.update(*t, &scan) {
                counts.push(f.stats().particles);
            }
        }
        counts
    };
    let calm = counts(0.02);
    let wild = counts(1.0);
    for c in [&calm, &wild] {
        assert!(c.iter().all(|&n| (300..=3000).contains(&n)), "{c:?}");
    }
    let mean = |c: &[usize]| c[5..].iter().sum::<usize>() as f64 / (c.len() - 5) as f64;
    // Wide motion noise spreads the moved samples over more bins: more particles.
    assert!(mean(&wild) > 1.5 * mean(&calm), "{calm:?} {wild:?}");
}

#[test]
fn global_localization_converges_on_the_floor() {
    let w = world();
    let truth = synthetic::tour(0.3);
    let mut f = Filter::new(w.model.clone(), quick_params(), 8, Init::Global);
    let e = drive(&w, &mut f, &truth, 12);
    let tail = &e[e.len() / 2..];
    assert!(rms(tail) < 0.1, "rms {} over the second half", rms(tail));
}

#[test]
fn a_kidnapped_robot_is_found_again() {
    let w = world();
    let truth = synthetic::tour(0.3);
    let mut f = Filter::new(
        w.model.clone(),
        quick_params(),
        21,
        Init::Pose(truth[0], diagonal(0.1, 0.1, 0.05)),
    );
    let before = drive(&w, &mut f, &truth[..40], 1);
    assert!(before.last().unwrap().0 < 0.1, "{before:?}");
    // Carried: the robot is now on another part of the tour, the odometry knows nothing.
    let after = drive(&w, &mut f, &truth[60..], 2);
    let found = after.iter().position(|e| e.0 < 0.2);
    let found = found.unwrap_or_else(|| panic!("never found again: {after:?}"));
    assert!(
        after[found..].iter().filter(|e| e.0 > 0.5).count() <= 2,
        "{after:?}"
    );
    // Without recovery, the filter stays lost.
    let mut p = quick_params();
    p.recovery = false;
    let mut g = Filter::new(
        w.model.clone(),
        p,
        21,
        Init::Pose(truth[0], diagonal(0.1, 0.1, 0.05)),
    );
    drive(&w, &mut g, &truth[..40], 1);
    let lost = drive(&w, &mut g, &truth[60..], 2);
    assert!(
        lost.iter().filter(|e| e.0 > 1.0).count() > lost.len() / 2,
        "{lost:?}"
    );
    let _ = found;
}

#[test]
fn set_pose_draws_the_given_gaussian() {
    let w = world();
    let mut p = quick_params();
    p.max_particles = 20_000;
    let cov = [[0.04, 0.01, 0.0], [0.01, 0.09, 0.0], [0.0, 0.0, 0.01]];
    let f = Filter::new(
        w.model.clone(),
        p,
        3,
        Init::Pose(Pose::new(1.0, 2.0, 3.0), cov),
    );
    let n = f.poses().len() as f64;
    let mx = f.poses().iter().map(|q| q.x).sum::<f64>() / n;
    let my = f.poses().iter().map(|q| q.y).sum::<f64>() / n;
    let cxy = f
        .poses()
        .iter()
        .map(|q| (q.x - mx) * (q.y - my))
        .sum::<f64>()
        / n;
    let vy = f.poses().iter().map(|q| (q.y - my).powi(2)).sum::<f64>() / n;
    assert!((mx - 1.0).abs() < 0.01 && (my - 2.0).abs() < 0.01);
    assert!(
        (cxy - 0.01).abs() < 0.003 && (vy - 0.09).abs() < 0.005,
        "{cxy} {vy}"
    );
    // Headings wrap around pi: the hypothesis' mean is near 3, not near 0.
    let h = &f.hypotheses()[0];
    assert!(angle_diff(h.mean.theta, 3.0).abs() < 0.01, "{:?}", h.mean);
}

#[test]
fn the_beam_model_tracks_too() {
    let w = world();
    let truth = synthetic::tour(0.3);
    let mut p = quick_params();
    p.model = Model::Beam;
    p.max_particles = 2000;
    let mut f = Filter::new(
        w.model.clone(),
        p,
        6,
        Init::Pose(truth[0], diagonal(0.1, 0.1, 0.05)),
    );
    let e = drive(&w, &mut f, &truth[..80], 4);
    assert!(rms(&e) < 0.08, "rms {}", rms(&e));
}

#[test]
fn the_search_rescues_a_filter_sure_of_a_wrong_pose() {
    // Started sure of a pose halfway round the tour: augmented MCL learns the
    // wrong pose's fit as its average and never injects; the scan-matched search finds
    // the truth within a few updates.
    let w = world();
    let truth = synthetic::tour(0.3);
    let wrong = truth[truth.len() / 2];
    let start = Init::Pose(wrong, diagonal(0.05, 0.05, 0.02));
    // Without expansion resetting, which on this floor walks a wrong pose back to the
    // truth a few centimetres per update: the search alone.
    let mut p = quick_params();
    p.expand_steps = 0;
    let mut f = Filter::new(w.model.clone(), p.clone(), 5, start);
    let e = drive(&w, &mut f, &truth[..60], 3);
    let found = e.iter().position(|x| x.0 < 0.2);
    let found = found.unwrap_or_else(|| panic!("never found: {e:?}"));
    assert!(found < 20, "found at update {found}: {e:?}");
    assert!(e[found..].iter().all(|x| x.0 < 0.5), "{e:?}");
    // Without the search, still lost at the end.
    p.search.candidates = 0;
    let mut g = Filter::new(w.model.clone(), p, 5, start);
    let lost = drive(&w, &mut g, &truth[..60], 3);
    assert!(lost.last().unwrap().0 > 1.0, "{lost:?}");
}
