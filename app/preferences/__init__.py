"""Each account's settings (ChatGPT's structured settings, ``openai/settings``): what the person
chose for this app, kept per account, one row per setting.

The settings themselves are declared by the features, each a group of its own
(``registry.settings_group``): deleting a feature deletes its settings, and rows it left behind
are never read again. The registry declares the read and update tools from those groups; this
package only keeps the values (``Preferences``) for the tools and for the features that read them.
"""

from app.preferences.store import Preferences

# What the privacy page says of them, when some feature offers settings.
PRIVACY = {
    "en": "The settings you choose for this app are kept with your account until you change them "
          "or delete your account.",
    "es": "Los ajustes que eliges para esta app se conservan con tu cuenta hasta que los cambias "
          "o eliminas tu cuenta.",
    "fr": "Les réglages que vous choisissez pour cette app sont conservés avec votre compte "
          "jusqu’à ce que vous les changiez ou supprimiez votre compte.",
    "pt": "As configurações que você escolhe para este app ficam guardadas com a sua conta até "
          "você mudá-las ou excluir a sua conta.",
    "zh": "你为此应用选择的设置会随你的账户保存，直到你更改它们或删除账户。",
}

__all__ = ["PRIVACY", "Preferences"]
