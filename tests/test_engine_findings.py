"""What the engine-path theorems found that their statements carry as an
exception (docs/engine-theorems.md): pinned here on the concrete model, so a
change to it is seen and the exception revisited."""

from models.geometry import CacheGroup, Deployment, Geometry, Request
from models.plan import plan
from models.prefill import run_prefill
from models.prefix_cache import cached_prefix, gpu_hit
from models.scheduler import last_cacheable_position
from models.variants import PR457_GUARDED


def test_eagle_drop_without_an_annotated_group_restores_past_the_last_cacheable_position():
    """The one-recurrent-block backoff puts the last cacheable position at 2,
    but the prefill goes on to publish 4, on the (1-token) target grid, and a
    later identical request restores it from the GPU prefix cache
    (models/prefix_cache.py): the lookup drops one hash unit of the target
    group under EAGLE drop, which leaves 4 of 5 tokens, not the backoff."""
    geometry = Geometry(
        name="eagle backoff past the last cacheable position",
        deployment=Deployment(
            dcp_size=1, block_size=1, max_num_scheduled_tokens=1, eagle_block_drop=True, mamba_block_size=2
        ),
        groups=(CacheGroup("target-attention", 1), CacheGroup("recurrent", 1)),
        request=Request(prompt_tokens=5),
    )
    resolved = plan(PR457_GUARDED, geometry)
    assert resolved.accepted and resolved.cadence == 2
    published = list(run_prefill(resolved, 1).published)
    assert published == [2, 4]
    assert last_cacheable_position(PR457_GUARDED, resolved.split, 5) == 2
    cached = cached_prefix(resolved, run_prefill(resolved, 1), 5, 5)
    assert list(cached.recurrent) == [2, 4]
    assert gpu_hit(cached, 5, 5) == 4
