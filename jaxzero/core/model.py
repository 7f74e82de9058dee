"""Planning with a learned model (MuZero): the search's root and recurrent function over
the model's latent positions instead of the game's states.

With ``model.kind=rules`` (AlphaZero) a search expands a node by ``env.step``
(:func:`jaxzero.core.search.make_recurrent_fn`). With ``model.kind=learned`` it expands by
the learned dynamics: the root is ``h(observation)``, a child ``g(latent, action)`` with
the prior and value ``f`` predicts there. The root's prior is masked to the legal moves
as MuZero masks it; inside the tree nothing is masked (``model.inner_legal`` masks with
the true rules, an ablation). The search never sees a game end: past the end the model
has learned absorbing positions (value and reward 0).

Signs are the rules search's: the reward is the mover's, the value the next mover's, and
the discount between them −1 in a two-player game (a learned model assumes the turn
passes at every move: a game whose player may move twice, ``Env.turns_alternate`` False,
is refused) and +1 in a single-player one (the search never discounts; γ enters the value
targets, :mod:`jaxzero.core.selfplay`).

Each node also carries the true position the same moves reach and whether a move on the
way was illegal or played past the end by the true rules (:class:`LatentNode`). The
search never reads them, save for the ablation's mask: they are what the
``model/off_rules`` diagnostic counts (:func:`off_rules_counts`), the share of the search
spent where the rules say no game goes. Tracking them costs one ``env.step`` per
expansion, which the rules search pays too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import mctx

from envs.core import Env, State, state_dataclass
from jaxzero.core import model_networks, networks
from jaxzero.core.config import Config
from jaxzero.core.mcts import mask_logits
from jaxzero.core.networks import ApplyFn

Array = jax.Array


@state_dataclass
class LatentNode:
    """A node of a learned model's tree, B of them."""

    latent: Array  # float32 [B, *latent_shape]  the model's position
    off_rules: Array  # bool [B]  a move on the way was illegal or past the end, by the rules
    # [B] the true position the same moves reach (diagnostics, inner_legal); None where
    # the search starts from observations alone (reanalyse)
    state: State | None = None


@dataclasses.dataclass(frozen=True)
class LearnedModel:
    """A learned model as a search plans with it.

    Attributes:
        network: a learned-model network (:mod:`jaxzero.core.model_networks`).
        num_players: 1 or 2: the discount between moves (+1, or −1 as the turn passes).
        inner_legal: mask moves inside the tree with the true rules (an ablation).
    """

    network: nn.Module
    num_players: int
    inner_legal: bool = False

    def root(self, params, states: State, apply_fn: ApplyFn | None = None) -> mctx.RootFnOutput:
        """The roots of a search from ``states`` [B].

        Args:
            params: the model's variables.
            states: B env states (their observations and legal moves).
            apply_fn: what gives the root's prior and value (a symmetry-averaged
                network, say); None or the model's own: ``f`` on the latent.

        Returns:
            mctx's root output: prior logits [B, A] masked to the legal moves, value
            [B], and as embedding the :class:`LatentNode` of ``h(observation)``.
        """
        latent = model_networks.represent(self.network, params, states.observation)
        if apply_fn is None or apply_fn == self.network.apply:  # h once, not twice
            logits, value = model_networks.predict(self.network, params, latent)
        else:
            logits, value = apply_fn(params, states.observation)
        batch = states.current_player.shape[0]
        return mctx.RootFnOutput(
            prior_logits=mask_logits(logits, states.legal_action_mask),
            value=value.astype(jnp.float32),
            embedding=LatentNode(latent, jnp.zeros((batch,), bool), states),
        )

    def root_from_observation(
        self, params, observation: Array, legal_action_mask: Array
    ) -> mctx.RootFnOutput:
        """Roots with no game state beside them (reanalyse: replay keeps observations).

        Args:
            params: the model's variables.
            observation: [B, *observation_shape].
            legal_action_mask: bool [B, A], the moves the root may search.

        Returns:
            mctx's root output whose embedding holds no true state.
        """
        latent = model_networks.represent(self.network, params, observation)
        logits, value = model_networks.predict(self.network, params, latent)
        return mctx.RootFnOutput(
            prior_logits=mask_logits(logits, legal_action_mask),
            value=value.astype(jnp.float32),
            embedding=LatentNode(latent, jnp.zeros((observation.shape[0],), bool)),
        )

    def recurrent_fn(self, env: Env) -> Callable:
        """The search's recurrent function over the model.

        Args:
            env: the game, to step the true position beside the model's (diagnostics,
                ``inner_legal``).

        Returns:
            ``recurrent_fn(params, key, action [B], node [B]) -> (RecurrentFnOutput,
            node)``: one move inside the model.
        """
        discount = -1.0 if self.num_players == 2 else 1.0

        def recurrent_fn(params, key: Array, action: Array, node: LatentNode):
            latent, reward = model_networks.step(self.network, params, node.latent, action)
            logits, value = model_networks.predict(self.network, params, latent)
            off_rules, state = node.off_rules, node.state
            if state is not None:  # the true game beside the model's
                legal = jnp.take_along_axis(state.legal_action_mask, action[:, None], 1)[:, 0]
                off_rules = off_rules | state.terminated | state.truncated | ~legal
                state = jax.vmap(env.step)(state, action, jax.random.split(key, action.shape[0]))
                if self.inner_legal:  # where the true game goes on, its legal moves only
                    live = ~(off_rules | state.terminated | state.truncated)
                    masked = mask_logits(logits, state.legal_action_mask)
                    logits = jnp.where(live[:, None], masked, logits)
            output = mctx.RecurrentFnOutput(
                reward=reward.astype(jnp.float32),
                discount=jnp.full(reward.shape, discount, jnp.float32),
                prior_logits=logits.astype(jnp.float32),
                value=value.astype(jnp.float32),
            )
            return output, LatentNode(latent, off_rules, state)

        return recurrent_fn


def learned_model(config: Config, env: Env, network: nn.Module) -> LearnedModel | None:
    """The learned model ``config.model`` asks for (None: plan with the rules)."""
    if not config.model.learned:
        return None
    return LearnedModel(network, env.num_players, config.model.inner_legal)


def make_network(config: Config, env: Env) -> nn.Module:
    """The network of ``config`` for ``env``: the rules network of ``config.network``, or
    with a learned model the model of the same section (built-in kinds) or a user's."""
    if not config.model.learned:
        return networks.make_network(config.network, env)
    if config.network.kind in ("auto", "resnet", "mlp"):
        return model_networks.make_learned_network(config.network, env)
    network = networks.make_network(config.network, env)
    check_learned_network(network, config.network.kind)
    return network


def builds(config: Config, env: Env, network: nn.Module) -> bool:
    """Whether ``config`` builds ``network`` itself (so recording it changes nothing); a
    recorded import path is not imported to compare (``jaxzero.core.trust``)."""
    if networks.imports_code(config.network.kind):
        return False
    try:
        return bool(make_network(config, env) == network)
    except ValueError:
        return False


def check_learned_network(network: nn.Module, name: str) -> None:
    """ValueError when a learned model's network lacks the methods the search calls."""
    if not model_networks.is_learned_network(network):
        missing = [m for m in model_networks.METHODS if not callable(getattr(network, m, None))]
        raise ValueError(
            f"model.kind=learned plans with network {name}, which has no "
            f"{', '.join(missing)}: a learned model is a flax Module with represent, step "
            "and predict (jaxzero.LearnedModelNetwork)"
        )


def check_game(config: Config, env: Env) -> None:
    """ValueError, naming the setting to change, when ``config.model`` cannot train
    ``env``: n-step targets of a two-player game, a learned model of a game whose turn
    need not pass."""
    if config.model.td_steps and env.num_players != 1:
        raise ValueError(
            f"model.td_steps={config.model.td_steps} bootstraps a single-player game's "
            f"score; {env.id} is a two-player game, which learns from its outcome: set "
            "model.td_steps=0"
        )
    if not config.model.learned:
        return
    if env.num_players > 2:
        raise ValueError(
            f"model.kind=learned plans for one or two players, {env.id} has {env.num_players}"
        )
    if env.num_players == 2 and not env.turns_alternate:
        raise ValueError(
            f"model.kind=learned assumes the turn passes at every move; in {env.id} a player "
            "may move twice running: set model.kind=rules"
        )


def off_rules_counts(tree: mctx.Tree) -> tuple[Array, Array]:
    """``(off_rules, expanded)``: float32 [] counts of a learned model's tree [B] over its
    nodes below the root: those reached through a move that was illegal or past the end
    by the true rules, and all of them."""
    expanded = tree.node_visits[:, 1:] > 0  # [B, N - 1]
    off = tree.embeddings.off_rules[:, 1:] & expanded
    return off.sum().astype(jnp.float32), expanded.sum().astype(jnp.float32)
